"""Where the tests find the shared corpus and Py3AMF: AMFGATE_SHARED_DIR, or ../shared beside
the checkout."""
import os
import pathlib
import sys

import pytest

SHARED = pathlib.Path(os.environ.get(
    "AMFGATE_SHARED_DIR", pathlib.Path(__file__).resolve().parents[3] / "shared"))
PY3AMF = SHARED / "peers" / "py3amf"
if str(PY3AMF) not in sys.path:
    sys.path.append(str(PY3AMF))


@pytest.fixture(scope="session")
def shared():
    if not (SHARED / "corpus").is_dir():
        pytest.fail(f"the shared corpus is not at {SHARED}: set AMFGATE_SHARED_DIR")
    return SHARED
