from gevent import monkey

monkey.patch_all()  # noqa: E702, I001 - first: before ssl, urllib3 and kubernetes load

# ``python -m example_app``: serve the example application (see ``example_app.serve``).

import sys  # noqa: E402

from .serve import main  # noqa: E402

sys.exit(main())
