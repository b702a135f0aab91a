"""``TFJobLink``: an extra link opening the TFJob in a dashboard, from a URL template with ``{namespace}``,
``{name}`` and ``{uid}`` (``dashboard_url_template`` or ``[tfjob_provider] dashboard_url_template``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from airflow.providers.common.compat.sdk import BaseOperatorLink, conf

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import BaseOperator, TaskInstanceKey

CONFIG_SECTION: Final = "tfjob_provider"
CONFIG_OPTION: Final = "dashboard_url_template"
XCOM_NAME: Final = "tfjob_name"
XCOM_NAMESPACE: Final = "tfjob_namespace"
XCOM_UID: Final = "tfjob_uid"
#: The backend (``"jobset"``), pushed by tasks that do not run a TFJob only.
XCOM_BACKEND: Final = "tfjob_backend"


def dashboard_url_template(operator: Any = None) -> str:
    """The operator's template if it has one, else the Airflow option, else ``""``."""
    own = getattr(operator, "dashboard_url_template", None)
    if own:
        return str(own)
    return str(conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback="") or "")


def render_dashboard_url(template: str, *, name: str | None, namespace: str | None, uid: str | None) -> str:
    """Fill the placeholders (URL-quoted); ``""`` when there is no template, no job, or the
    template names another placeholder."""
    if not template or not name:
        return ""
    try:
        return template.format(
            name=quote(name, safe=""),
            namespace=quote(namespace or "", safe=""),
            uid=quote(uid or "", safe=""),
        )
    except (KeyError, IndexError, ValueError):
        return ""


class TFJobLink(BaseOperatorLink):
    """The "TFJob" extra link of :class:`~tfjob_provider.operators.tfjob.TFJobOperator` and
    :class:`~tfjob_provider.sensors.tfjob.TFJobSensor`."""

    name = "TFJob"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        template = dashboard_url_template(operator)
        if not template:
            return ""
        from airflow.providers.common.compat.sdk import XCom

        return render_dashboard_url(
            template,
            name=XCom.get_value(ti_key=ti_key, key=XCOM_NAME),
            namespace=XCom.get_value(ti_key=ti_key, key=XCOM_NAMESPACE),
            uid=XCom.get_value(ti_key=ti_key, key=XCOM_UID),
        )


__all__ = [
    "CONFIG_OPTION",
    "CONFIG_SECTION",
    "XCOM_NAME",
    "XCOM_NAMESPACE",
    "XCOM_UID",
    "TFJobLink",
    "dashboard_url_template",
    "render_dashboard_url",
]
