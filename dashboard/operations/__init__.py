"""The Operations page's parts (dashboard/app_pages/operations.py): the recommended actions and the one opened,
the acting controls with their dry run and confirmations, the request typed by hand, and the audit log."""
