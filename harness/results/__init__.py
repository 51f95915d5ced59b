"""What a measurement returns: frozen results, each with ``to_json()`` and ``from_json()``, written to a file once by
whoever made it and read back into the same type. Every file format carries its version (:mod:`.formats`)."""
