"""The one thing pyproject.toml cannot declare stably: the optional C extension.

floe/serde/_avro_native.c decodes manifests (floe.serde.avro_decoder). It is optional: where it cannot be
compiled (no C compiler), the install goes on and the same decoding runs in Python, several times slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("floe.serde._avro_native", ["floe/serde/_avro_native.c"], optional=True)])
