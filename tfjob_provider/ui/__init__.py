"""The "TFJob" tab of a task instance in the Airflow UI: its data (record, live read, view model)
and its page. Importing this package imports nothing else, so workers and the triggerer stay cheap."""
