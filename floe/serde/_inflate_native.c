/* An Avro container file read, framed and inflated in one call that lets go of the GIL
(floe.serde.avro_decoder.inflate_container and read_inflated).

Manifest prefetch threads read and inflate manifests while the decoding thread decodes others. Through
Python, a thread takes the GIL back after each step (open, read, close, every block's zlib call), and while
the decoder holds the GIL each take waits for Python's switch interval (5 ms): on a million-file plan the
four threads spent 10 s reading and 5 s inflating 1,000 manifests that one thread reads in 0.1 s and
inflates in 1.7 s, and the decoder waited for them. Here a whole file is read, framed and inflated without
the GIL, which is taken once, to hand over the header and the blocks.

Framing as the Avro spec's object container files: after the header, blocks of (zig-zag long count, zig-zag
long size, size bytes, 16-byte sync marker); deflate blocks are raw deflate streams (no zlib header). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYNC_SIZE 16
/* An inflated block larger than this is refused rather than allocated (a manifest block is kilobytes). */
#define MAX_BLOCK ((size_t)1 << 31)

typedef struct {
    unsigned char *bytes;
    size_t size;
    long long count;
} Block;

typedef struct {
    Block *items;
    size_t len, cap;
} Blocks;

static void blocks_free(Blocks *b) {
    for (size_t i = 0; i < b->len; i++) free(b->items[i].bytes);
    free(b->items);
}

/* Without the GIL: an error is a (kind, message) pair raised once the GIL is back. */
enum { OK, E_EOF, E_VALUE, E_MEMORY };

static int read_long(const unsigned char *p, size_t n, size_t *pos, long long *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n) return E_EOF;
        unsigned char b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = (long long)((v >> 1) ^ (~(v & 1) + 1));
            return OK;
        }
    }
    return E_VALUE;
}

static int inflate_raw(const unsigned char *in, size_t in_size, Block *out, const char **message) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) return E_MEMORY;
    size_t cap = in_size * 4 + 64, size = 0;
    unsigned char *buf = malloc(cap);
    int err = OK;
    if (buf == NULL) {
        inflateEnd(&z);
        return E_MEMORY;
    }
    z.next_in = (Bytef *)in;
    size_t in_left = in_size;
    for (;;) {
        if (size == cap) {
            if (cap >= MAX_BLOCK) {
                *message = "inflated block too large";
                err = E_VALUE;
                break;
            }
            size_t grown = cap * 2 > MAX_BLOCK ? MAX_BLOCK : cap * 2;
            unsigned char *more = realloc(buf, grown);
            if (more == NULL) {
                err = E_MEMORY;
                break;
            }
            buf = more;
            cap = grown;
        }
        uInt chunk_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
        uInt chunk_out = cap - size > UINT_MAX ? UINT_MAX : (uInt)(cap - size);
        z.next_in = (Bytef *)in + (in_size - in_left);
        z.avail_in = chunk_in;
        z.next_out = buf + size;
        z.avail_out = chunk_out;
        int rc = inflate(&z, Z_NO_FLUSH);
        in_left -= chunk_in - z.avail_in;
        size += chunk_out - z.avail_out;
        if (rc == Z_STREAM_END) break;
        if (rc == Z_BUF_ERROR && z.avail_out != 0) { /* no progress with room left: the input ended early */
            *message = "incomplete or truncated stream";
            err = E_VALUE;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            *message = z.msg != NULL ? z.msg : "invalid deflate data";
            err = E_VALUE;
            break;
        }
    }
    inflateEnd(&z);
    if (err != OK) {
        free(buf);
        return err;
    }
    out->bytes = buf;
    out->size = size;
    return OK;
}

static int split(const unsigned char *p, size_t n, size_t pos, const unsigned char *sync, int deflate,
                 Blocks *blocks, const char **message, char *text, size_t text_size) {
    while (pos < n) {
        long long count, size;
        int err = read_long(p, n, &pos, &count);
        if (err == OK) err = read_long(p, n, &pos, &size);
        if (err == E_EOF) *message = "Avro file ends inside a number";
        if (err == E_VALUE) *message = "Avro number longer than 10 bytes";
        if (err != OK) return err;
        if (size < 0) { /* a negative count is the decoder's to refuse, as in the Python framing */
            *message = "negative Avro block size";
            return E_VALUE;
        }
        if ((size_t)size > n - pos) {
            *message = "Avro file ends inside a block";
            return E_EOF;
        }
        const unsigned char *data = p + pos;
        pos += (size_t)size;
        if (n - pos < SYNC_SIZE || memcmp(p + pos, sync, SYNC_SIZE) != 0) {
            *message = "Avro block does not end with the file's sync marker";
            return E_VALUE;
        }
        pos += SYNC_SIZE;
        if (blocks->len == blocks->cap) {
            size_t cap = blocks->cap ? blocks->cap * 2 : 16;
            Block *more = realloc(blocks->items, cap * sizeof(Block));
            if (more == NULL) return E_MEMORY;
            blocks->items = more;
            blocks->cap = cap;
        }
        Block *b = &blocks->items[blocks->len];
        b->count = count;
        if (deflate) {
            const char *why = NULL;
            err = inflate_raw(data, (size_t)size, b, &why);
            if (err == E_VALUE) {
                snprintf(text, text_size, "corrupt deflate block: %s", why);
                *message = text;
            }
            if (err != OK) return err;
        } else {
            b->bytes = malloc(size ? (size_t)size : 1);
            if (b->bytes == NULL) return E_MEMORY;
            memcpy(b->bytes, data, (size_t)size);
            b->size = (size_t)size;
        }
        blocks->len++;
    }
    return OK;
}

#define MAX_META 256

typedef struct {
    size_t key, key_len, value, value_len;
} Meta;

typedef struct {
    Meta meta[MAX_META];
    size_t meta_len;
    int framed; /* codec null or deflate: framed here; else the caller reads it */
    Blocks blocks;
} Container;

static int take_bytes(const unsigned char *p, size_t n, size_t *pos, size_t *at, size_t *len) {
    long long size;
    int err = read_long(p, n, pos, &size);
    if (err != OK) return err;
    if (size < 0) return E_VALUE;
    if ((size_t)size > n - *pos) return E_EOF;
    *at = *pos;
    *len = (size_t)size;
    *pos += (size_t)size;
    return OK;
}

static int same(const unsigned char *p, size_t at, size_t len, const char *text) {
    return len == strlen(text) && memcmp(p + at, text, len) == 0;
}

/* The header (magic, metadata map, sync), then the blocks when the codec is one framed here. */
static int parse(const unsigned char *p, size_t n, Container *c, const char **message, char *text, size_t text_size) {
    size_t pos = 4;
    if (n < 4 || memcmp(p, "Obj\x01", 4) != 0) {
        *message = "not an Avro object container file (bad magic bytes)";
        return E_VALUE;
    }
    for (;;) {
        long long count;
        int err = read_long(p, n, &pos, &count);
        if (err != OK) {
            *message = err == E_EOF ? "Avro file ends inside a number" : "Avro number longer than 10 bytes";
            return err;
        }
        if (count == 0) break;
        if (count < 0) { /* a negative count is followed by the block's size in bytes */
            long long skip;
            if ((err = read_long(p, n, &pos, &skip)) != OK) {
                *message = "Avro file ends inside a number";
                return err;
            }
            count = -count;
        }
        for (long long i = 0; i < count; i++) {
            if (c->meta_len == MAX_META) { /* an unusual header: left to the Python reader */
                c->framed = 0;
                return OK;
            }
            Meta *m = &c->meta[c->meta_len++];
            if ((err = take_bytes(p, n, &pos, &m->key, &m->key_len)) != OK
                || (err = take_bytes(p, n, &pos, &m->value, &m->value_len)) != OK) {
                *message = err == E_EOF ? "Avro file ends inside its header" : "bad Avro header entry";
                return err;
            }
        }
    }
    if (n - pos < SYNC_SIZE) {
        *message = "Avro file ends inside its header";
        return E_EOF;
    }
    const unsigned char *sync = p + pos;
    pos += SYNC_SIZE;
    int deflate = 0;
    c->framed = 1;
    for (size_t i = 0; i < c->meta_len; i++) {
        if (same(p, c->meta[i].key, c->meta[i].key_len, "avro.codec")) {
            deflate = same(p, c->meta[i].value, c->meta[i].value_len, "deflate");
            c->framed = deflate || same(p, c->meta[i].value, c->meta[i].value_len, "null");
        }
    }
    if (!c->framed) return OK;
    return split(p, n, pos, sync, deflate, &c->blocks, message, text, text_size);
}

static int read_whole(const char *path, unsigned char **out, size_t *size, int *os_error) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *os_error = errno;
        return E_VALUE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        *os_error = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        return E_VALUE;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    unsigned char *buf = malloc(cap);
    if (buf == NULL) {
        close(fd);
        return E_MEMORY;
    }
    for (;;) {
        if (len == cap) {
            unsigned char *more = realloc(buf, cap * 2);
            if (more == NULL) {
                free(buf);
                close(fd);
                return E_MEMORY;
            }
            buf = more;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR) continue;
            *os_error = errno;
            free(buf);
            close(fd);
            return E_VALUE;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    *out = buf;
    *size = len;
    return OK;
}

static PyObject *result(const unsigned char *p, Container *c) {
    if (!c->framed) Py_RETURN_NONE;
    PyObject *meta = PyDict_New(), *blocks = PyTuple_New((Py_ssize_t)c->blocks.len);
    if (meta == NULL || blocks == NULL) goto fail;
    for (size_t i = 0; i < c->meta_len; i++) {
        Meta *m = &c->meta[i];
        PyObject *k = PyUnicode_DecodeUTF8((const char *)p + m->key, (Py_ssize_t)m->key_len, NULL);
        PyObject *v = k ? PyUnicode_DecodeUTF8((const char *)p + m->value, (Py_ssize_t)m->value_len, NULL) : NULL;
        int bad = v == NULL || PyDict_SetItem(meta, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad) goto fail;
    }
    for (size_t i = 0; i < c->blocks.len; i++) {
        Block *b = &c->blocks.items[i];
        PyObject *item = Py_BuildValue("(y#L)", (const char *)b->bytes, (Py_ssize_t)b->size, b->count);
        if (item == NULL) goto fail;
        PyTuple_SET_ITEM(blocks, (Py_ssize_t)i, item);
    }
    return Py_BuildValue("(NN)", meta, blocks);
fail:
    Py_XDECREF(meta);
    Py_XDECREF(blocks);
    return NULL;
}

static PyObject *raise_error(int err, const char *message) {
    if (err == E_MEMORY) return PyErr_NoMemory();
    PyErr_SetString(err == E_EOF ? PyExc_EOFError : PyExc_ValueError, message);
    return NULL;
}

static PyObject *container(PyObject *module, PyObject *arg) {
    (void)module;
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0) return NULL;
    Container *c = calloc(1, sizeof(Container));
    if (c == NULL) {
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    const char *message = NULL;
    char text[256]; /* this call's own: several threads inflate at once */
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = parse(data.buf, (size_t)data.len, c, &message, text, sizeof text);
    Py_END_ALLOW_THREADS
    PyObject *out = err == OK ? result(data.buf, c) : raise_error(err, message);
    blocks_free(&c->blocks);
    free(c);
    PyBuffer_Release(&data);
    return out;
}

static PyObject *read_file(PyObject *module, PyObject *arg) {
    (void)module;
    PyObject *encoded;
    if (!PyUnicode_FSConverter(arg, &encoded)) return NULL;
    Container *c = calloc(1, sizeof(Container));
    if (c == NULL) {
        Py_DECREF(encoded);
        return PyErr_NoMemory();
    }
    const char *path = PyBytes_AS_STRING(encoded);
    const char *message = NULL;
    char text[256];
    unsigned char *buf = NULL;
    size_t size = 0;
    int os_error = 0, err;
    Py_BEGIN_ALLOW_THREADS
    err = read_whole(path, &buf, &size, &os_error);
    if (err == OK) err = parse(buf, size, c, &message, text, sizeof text);
    Py_END_ALLOW_THREADS
    PyObject *out;
    if (os_error) {
        errno = os_error;
        out = PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
    } else {
        out = err == OK ? result(buf, c) : raise_error(err, message);
    }
    free(buf);
    blocks_free(&c->blocks);
    free(c);
    Py_DECREF(encoded);
    return out;
}

static PyMethodDef methods[] = {
    {"container", container, METH_O,
     "container(data): (metadata, blocks) of an Avro container, blocks inflated; None for other codecs"},
    {"read_file", read_file, METH_O,
     "read_file(path): container() of a local file, read without the GIL; OSError as open() raises"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_inflate_native", "Avro container blocks inflated without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__inflate_native(void) { return PyModule_Create(&module); }
