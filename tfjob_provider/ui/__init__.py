"""The TFJob tab in Airflow's UI: the plugin, its app and page, and the data they show."""
