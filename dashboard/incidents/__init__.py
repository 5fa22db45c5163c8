"""The Incidents page's sections too long for its file (dashboard/app_pages/incidents.py draws them). Importing
these modules draws nothing."""
