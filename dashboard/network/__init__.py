"""The Network page's sections too long for its file (dashboard/app_pages/network.py draws them). Importing
these modules draws nothing."""
