"""The one thing pyproject.toml cannot declare stably: the optional C extension.

floe/serde/_avro_native.c decodes manifests (floe.serde.avro_decoder), floe/serde/_entries_native.c turns the
decoded records into entries (floe.serde.manifest_avro), floe/serde/_inflate_native.c inflates manifests
without holding the GIL (it needs zlib's headers) and floe/spec/_slots_native.c builds the value
classes planning makes by the million (floe.spec.fast_new). All are optional: where they cannot be
compiled (no C compiler), the install goes on and the same work runs in Python, several times slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("floe.serde._avro_native", ["floe/serde/_avro_native.c"], optional=True),
        Extension("floe.serde._entries_native", ["floe/serde/_entries_native.c"], optional=True),
        Extension("floe.serde._inflate_native", ["floe/serde/_inflate_native.c"], libraries=["z"], optional=True),
        Extension("floe.spec._slots_native", ["floe/spec/_slots_native.c"], optional=True),
    ]
)
