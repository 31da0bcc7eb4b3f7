import sys

from koordlet.ctl.main import main

sys.exit(main())
