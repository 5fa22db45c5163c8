"""The Jobs page's sections too long for its file (dashboard/app_pages/jobs.py draws them). Importing these
modules draws nothing."""
