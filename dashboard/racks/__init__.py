"""The Racks page's sections too long for its file (dashboard/app_pages/racks.py draws them). Importing these
modules draws nothing."""
