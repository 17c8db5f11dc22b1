#!/bin/bash
# Reference solution: greet by name, and a start script (run in /workspace).
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

p = Path("app.py")
p.write_text(p.read_text().replace('    return "Hello, World!"', '    return f"Hello, {name or \'World\'}!"', 1))
PY
printf '#!/bin/sh\nexec python3 app.py\n' > start.sh
