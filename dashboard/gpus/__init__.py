"""The GPUs page's sections too long for its file (dashboard/app_pages/gpus.py draws them). Importing these
modules draws nothing."""
