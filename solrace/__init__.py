"""solrace: real-time competitive patience races.

The distribution maps the design card's folders to import names: ``engine/`` is
``solrace.engine``, ``server/`` is ``solrace.server`` and ``client-cli/`` is
``solrace.client``.
"""

from __future__ import annotations

__version__ = "0.1.0"
