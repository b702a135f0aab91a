"""Names in tfjob_provider that vulture reports as unused although something outside it uses them.

``make lint`` runs ``vulture tfjob_provider vulture_allowlist.py``: any function, method, class,
attribute or variable of the product that nothing in the product refers to is reported — code
that only tests (or nothing) call belongs in tests/ or the sandbox, not in the wheel.  The
entries below were reviewed one by one; each says who uses the name.  Add one only with that
reason; remove it when the name goes.

The file is valid Python that names the real objects (tests/unit/test_vulture_allowlist.py
imports it), so an entry whose name was renamed or removed fails there instead of lingering.
"""

import reprlib
import types

import kubernetes_asyncio.client
from kubernetes.client import Configuration
from kubernetes_asyncio.client import Configuration as AsyncConfiguration

import tfjob_provider
from tfjob_provider import get_provider_info
from tfjob_provider.clipping import _BoundedRepr
from tfjob_provider.decorators.tfjob import _TFJobDecoratedOperator
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.lineage.openlineage_objects import TFJobJobFacet, TFJobRunFacet
from tfjob_provider.lineage.task_lineage import TFJobLineage
from tfjob_provider.links import TFJobLink
from tfjob_provider.operators.tfjob import TFJobOperator
from tfjob_provider.sensors.tfjob import TFJobSensor
from tfjob_provider.triggers.tfjob import TFJobTrigger

# Packaging: the apache_airflow_provider entry point in pyproject.toml names it.
get_provider_info

# Airflow's BaseHook: the connection form and `airflow connections` read these class attributes,
# the UI's "Test" button calls test_connection, generic code and users' tasks call get_conn.
TFJobHook.conn_name_attr
TFJobHook.conn_type
TFJobHook.hook_name
TFJobHook.test_connection
TFJobHook.get_conn

# Attributes of the Kubernetes clients' configurations that the hook sets and the clients read:
# TLS verification off (disable_verify_ssl), the token refresher of exec-credential users, and
# urllib3's own retries switched off (the provider's retry policy is the only one).
Configuration().verify_ssl
Configuration().retries
AsyncConfiguration().verify_ssl
AsyncConfiguration().refresh_api_key_hook

# Exception chaining set by hand where an error is built and queued rather than raised
# (kube/sync_client.py, kube/async_client.py): tracebacks and tests read __cause__.
BaseException().__cause__

# Airflow's BaseOperatorLink: the UI calls get_link to render the button.
TFJobLink.get_link

# Airflow's BaseOperator / BaseSensorOperator class attributes, read by Airflow's templating,
# the UI and serialization.
TFJobOperator.template_fields
TFJobOperator.template_ext
TFJobOperator.template_fields_renderers
TFJobOperator.operator_extra_links
TFJobOperator.ui_color
TFJobSensor.template_fields
TFJobSensor.operator_extra_links
TFJobSensor.ui_color

# Airflow calls these: execute_complete when a deferred task resumes (named in self.defer),
# on_kill when a running task is killed.
TFJobOperator.execute_complete
TFJobOperator.on_kill
TFJobSensor.execute_complete

# Airflow's BaseTrigger: the triggerer serializes a trigger to store and rebuild it, and calls
# on_kill (Airflow >= 3.3) when the deferred task is killed.
TFJobTrigger.serialize
TFJobTrigger.on_kill

# Airflow's BaseOperator: operator_name (UI, serialized DAG) reads custom_operator_name, its
# __deepcopy__ reads shallow_copy_attrs.
_TFJobDecoratedOperator.custom_operator_name
_TFJobDecoratedOperator.shallow_copy_attrs

# The import system reads __path__ of a package: decorators/pod_runner.py gives one to the parent
# packages it creates for the modules a @task.tfjob function ships.
tfjob_provider.__path__

# reprlib.Repr reads its limits from these attributes and dispatches to repr_<type name> methods
# (clipping.py's bounded repr sets the limits and renders huge integers by size).
reprlib.Repr().maxlevel
reprlib.Repr().maxstring
reprlib.Repr().maxother
reprlib.Repr().maxlong
reprlib.Repr().maxdict
reprlib.Repr().maxlist
reprlib.Repr().maxtuple
reprlib.Repr().maxset
reprlib.Repr().maxfrozenset
_BoundedRepr.repr_int

# lean_import.py builds package modules by hand: the import system reads these module attributes,
# and turning a lazy package into an ordinary module is an assignment to __class__.
types.ModuleType("").__class__
types.ModuleType("").__package__
types.ModuleType("").__loader__

# kubernetes_asyncio reads it when building its aiohttp connector (hooks/tfjob.py sets no limit).
kubernetes_asyncio.client.Configuration().connection_pool_maxsize

# Airflow's plugins manager reads these (the airflow.plugins entry point names the class).
from tfjob_provider.ui.plugin import TFJobPlugin  # noqa: E402

TFJobPlugin.fastapi_apps
TFJobPlugin.external_views
# The OpenLineage provider's DefaultExtractor calls these (docs/guides/assets-and-lineage.md).
TFJobLineage.get_openlineage_facets_on_start
TFJobLineage.get_openlineage_facets_on_complete
TFJobLineage.get_openlineage_facets_on_failure
# OpenLineage serialises the facets' attrs fields into events and asks each facet for its schema URL.
TFJobJobFacet.replicaSpecs
TFJobJobFacet.runPolicy
TFJobJobFacet.successPolicy
TFJobJobFacet.enableDynamicWorker
TFJobJobFacet._get_schema
TFJobRunFacet.decidingPods
TFJobRunFacet.recreationCount
TFJobRunFacet.startTime
TFJobRunFacet.completionTime
TFJobRunFacet.durationSeconds
TFJobRunFacet.outputKeys
TFJobRunFacet._get_schema
