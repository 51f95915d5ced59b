"""``python -m harness.measuring.resident REQUEST.json CMD_FD REPORT_FD``: a resident worker (:mod:`.child`)."""

import sys

from harness.measuring.ending import end
from harness.measuring.resident.child import main

end(main(sys.argv[1:]))
