"""``python -m harness.measuring.resident REQUEST.json CMD_FD REPORT_FD``: a resident worker (:mod:`.child`)."""

import sys

from harness.measuring.resident.child import main

sys.exit(main(sys.argv[1:]))
