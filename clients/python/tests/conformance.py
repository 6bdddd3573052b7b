"""The client conformance suite (clients/conformance): the report of the
scenarios that passed, and the vector files."""

import json
import os
from typing import Any, Dict

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conformance",
                       "vectors")


def passed(scenario: str) -> None:
    """Appends ``scenario`` to $BATON_CONFORMANCE_REPORT. Call it after the
    scenario's last assertion: a failed assertion never gets here."""
    path = os.environ.get("BATON_CONFORMANCE_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(scenario + "\n")


def load(name: str) -> Dict[str, Any]:
    """A vector file of clients/conformance/vectors."""
    with open(os.path.join(VECTORS, name)) as f:
        return json.load(f)
