/* Avro binary decoding in C for floe.serde.avro_decoder (Avro 1.11 spec, "Binary Encoding").
 *
 * The Python side compiles a writer schema (and a projection) into a plan: nested tuples, one per schema
 * node, tagged by a string (avro_decoder._Planner documents them). Program(plan) turns the plan into a tree
 * of Nodes once; a Program then decodes values exactly as the Python readers built from the same plan do
 * (same Python values: tuples or dicts for records, dicts for Iceberg's map arrays, ints for dates and
 * timestamps, Decimal and UUID through the plan's converter callables), only without an interpreter step
 * per byte. Manifest planning decodes millions of entries; this is where its time went.
 *
 * Malformed data raises ValueError (the Python readers raise IndexError or ValueError): the callers turn
 * either into InvalidMetadataError naming the file.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum Kind {
    K_NULL, K_BOOLEAN, K_LONG, K_FLOAT, K_DOUBLE, K_BYTES, K_STRING, K_FIXED, K_CONVERT, K_OPTIONAL,
    K_UNION, K_RECORD, K_ARRAY, K_INT_LONG_MAP, K_INT_BYTES_MAP, K_KV_MAP, K_MAP, K_ENUM, K_SKIP
};

typedef struct Node {
    int kind;
    int flag;                /* optional: null comes first; record: read as a tuple */
    Py_ssize_t size;         /* fixed: byte size */
    struct Node **children;  /* optional/convert/array/skip: 1; kv_map: key, value; record, union: n */
    Py_ssize_t nchildren;
    int64_t *keep;           /* int-keyed maps: sorted keys to keep; NULL keeps every key */
    Py_ssize_t nkeep;
    PyObject *obj;           /* record: field names; enum: symbols; convert: the callable */
    Py_ssize_t min_size;     /* the fewest bytes a value takes (bounds block counts by the bytes left) */
} Node;

typedef struct {
    const unsigned char *buf;
    Py_ssize_t len;
    Py_ssize_t pos;
} Cursor;

/* -- plans -> nodes --------------------------------------------------------------------------------- */

static void node_free(Node *n) {
    if (n == NULL) return;
    for (Py_ssize_t i = 0; i < n->nchildren; i++) node_free(n->children[i]);
    PyMem_Free(n->children);
    PyMem_Free(n->keep);
    Py_XDECREF(n->obj);
    PyMem_Free(n);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static Node *node_from_plan(PyObject *plan, int depth);

static int add_children(Node *n, PyObject *seq, int depth) {
    PyObject *fast = PySequence_Fast(seq, "an Avro plan's children must be a sequence");
    if (fast == NULL) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    n->children = PyMem_Calloc(count ? count : 1, sizeof(Node *));
    if (n->children == NULL) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < count; i++) {
        n->children[i] = node_from_plan(PySequence_Fast_GET_ITEM(fast, i), depth + 1);
        if (n->children[i] == NULL) { Py_DECREF(fast); return -1; }
        n->nchildren = i + 1;
    }
    Py_DECREF(fast);
    return 0;
}

static int add_child(Node *n, PyObject *plan, int depth) {
    n->children = PyMem_Calloc(2, sizeof(Node *));
    if (n->children == NULL) { PyErr_NoMemory(); return -1; }
    n->children[n->nchildren] = node_from_plan(plan, depth + 1);
    if (n->children[n->nchildren] == NULL) return -1;
    n->nchildren++;
    return 0;
}

static int set_keep(Node *n, PyObject *keep) {
    if (keep == Py_None) return 0;
    PyObject *fast = PySequence_Fast(keep, "map keys to keep must be a collection of ints");
    if (fast == NULL) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    n->keep = PyMem_Calloc(count ? count : 1, sizeof(int64_t));
    if (n->keep == NULL) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < count; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(fast); return -1; }
        n->keep[i] = v;
    }
    n->nkeep = count;
    Py_DECREF(fast);
    qsort(n->keep, (size_t)count, sizeof(int64_t), cmp_i64);
    return 0;
}

static const struct { const char *tag; int kind; } PRIMITIVES[] = {
    {"null", K_NULL}, {"boolean", K_BOOLEAN}, {"int", K_LONG}, {"long", K_LONG}, {"float", K_FLOAT},
    {"double", K_DOUBLE}, {"bytes", K_BYTES}, {"string", K_STRING},
};

static Node *node_from_plan(PyObject *plan, int depth) {
    if (depth > 200) { PyErr_SetString(PyExc_ValueError, "Avro plan nested too deeply"); return NULL; }
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(plan, 0))) {
        PyErr_SetString(PyExc_TypeError, "an Avro plan node is a tuple starting with its tag");
        return NULL;
    }
    const char *tag = PyUnicode_AsUTF8(PyTuple_GET_ITEM(plan, 0));
    if (tag == NULL) return NULL;
    Py_ssize_t size = PyTuple_GET_SIZE(plan);
    Node *n = PyMem_Calloc(1, sizeof(Node));
    if (n == NULL) { PyErr_NoMemory(); return NULL; }
    PyObject *a1 = size > 1 ? PyTuple_GET_ITEM(plan, 1) : NULL;
    PyObject *a2 = size > 2 ? PyTuple_GET_ITEM(plan, 2) : NULL;
    PyObject *a3 = size > 3 ? PyTuple_GET_ITEM(plan, 3) : NULL;
    int ok = -1;
    for (size_t i = 0; i < sizeof(PRIMITIVES) / sizeof(PRIMITIVES[0]); i++) {
        if (strcmp(tag, PRIMITIVES[i].tag) == 0) { n->kind = PRIMITIVES[i].kind; ok = 0; goto done; }
    }
    if (strcmp(tag, "fixed") == 0 && a1) {
        n->kind = K_FIXED;
        n->size = PyLong_AsSsize_t(a1);
        if (n->size >= 0) ok = 0;
        else if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative Avro fixed size");
    } else if (strcmp(tag, "convert") == 0 && a2) {  /* ("convert", child, fn) */
        n->kind = K_CONVERT;
        Py_INCREF(a2);
        n->obj = a2;
        ok = add_child(n, a1, depth);
    } else if (strcmp(tag, "optional") == 0 && a2) {  /* ("optional", null_first, child) */
        n->kind = K_OPTIONAL;
        n->flag = PyObject_IsTrue(a1);
        ok = n->flag < 0 ? -1 : add_child(n, a2, depth);
    } else if (strcmp(tag, "union") == 0 && a1) {
        n->kind = K_UNION;
        ok = add_children(n, a1, depth);
    } else if (strcmp(tag, "record") == 0 && a3) {  /* ("record", names, children, as_tuple) */
        n->kind = K_RECORD;
        n->flag = PyObject_IsTrue(a3);
        n->obj = PySequence_Tuple(a1);
        ok = (n->flag < 0 || n->obj == NULL) ? -1 : add_children(n, a2, depth);
        if (ok == 0 && PyTuple_GET_SIZE(n->obj) != n->nchildren) {
            PyErr_SetString(PyExc_ValueError, "an Avro record plan needs one name per field");
            ok = -1;
        }
    } else if (strcmp(tag, "array") == 0 && a1) {
        n->kind = K_ARRAY;
        ok = add_child(n, a1, depth);
    } else if (strcmp(tag, "int_long_map") == 0 && a1) {
        n->kind = K_INT_LONG_MAP;
        ok = set_keep(n, a1);
    } else if (strcmp(tag, "int_bytes_map") == 0 && a1) {
        n->kind = K_INT_BYTES_MAP;
        ok = set_keep(n, a1);
    } else if (strcmp(tag, "kv_map") == 0 && a2) {
        n->kind = K_KV_MAP;
        ok = add_child(n, a1, depth);
        if (ok == 0) {
            n->children[1] = node_from_plan(a2, depth + 1);
            ok = n->children[1] == NULL ? -1 : 0;
            if (ok == 0) n->nchildren = 2;
        }
    } else if (strcmp(tag, "map") == 0 && a1) {
        n->kind = K_MAP;
        ok = add_child(n, a1, depth);
    } else if (strcmp(tag, "enum") == 0 && a1) {
        n->kind = K_ENUM;
        n->obj = PySequence_Tuple(a1);
        ok = n->obj == NULL ? -1 : 0;
    } else if (strcmp(tag, "skip") == 0 && a1) {
        n->kind = K_SKIP;
        ok = add_child(n, a1, depth);
    } else {
        PyErr_Format(PyExc_ValueError, "unknown Avro plan node %R", plan);
    }
done:
    if (ok != 0) { node_free(n); return NULL; }
    switch (n->kind) {
    case K_NULL: n->min_size = 0; break;
    case K_FIXED: n->min_size = n->size; break;
    case K_FLOAT: n->min_size = 4; break;
    case K_DOUBLE: n->min_size = 8; break;
    case K_CONVERT: case K_SKIP: n->min_size = n->children[0]->min_size; break;
    case K_RECORD:
        for (Py_ssize_t i = 0; i < n->nchildren; i++) n->min_size += n->children[i]->min_size;
        break;
    case K_INT_LONG_MAP: case K_INT_BYTES_MAP: n->min_size = 2; break;  /* as an item: key and value */
    default: n->min_size = 1;  /* a varint, a length, a union index or a block count */
    }
    return n;
}

/* The fewest bytes one item of an array or map block takes. */
static Py_ssize_t item_min_size(const Node *n) {
    switch (n->kind) {
    case K_ARRAY: return n->children[0]->min_size;
    case K_INT_LONG_MAP: case K_INT_BYTES_MAP: return 2;
    case K_KV_MAP: return n->children[0]->min_size + n->children[1]->min_size;
    default: return 1 + n->children[0]->min_size;  /* K_MAP: a string key's length, then the value */
    }
}

/* A block of ``count`` items must fit in the bytes left; items that take no bytes (nulls) are capped, so a
 * damaged or hostile count cannot make a decoder loop or allocate without end. */
static int check_block(const Node *n, const Cursor *c, int64_t count) {
    Py_ssize_t least = item_min_size(n);
    if (least > 0 ? count > (c->len - c->pos) / least : count > (1 << 24)) {
        PyErr_Format(PyExc_ValueError, "Avro block of %lld items cannot fit at byte %zd", (long long)count, c->pos);
        return -1;
    }
    return 0;
}

/* -- primitives ------------------------------------------------------------------------------------- */

static int truncated(const Cursor *c) {
    PyErr_Format(PyExc_ValueError, "truncated Avro data at byte %zd", c->pos);
    return -1;
}

static inline int read_long(Cursor *c, int64_t *out) {
    const unsigned char *buf = c->buf;
    Py_ssize_t p = c->pos;
    if (p < c->len && buf[p] < 0x80) {  /* one byte: most counts, keys and lengths */
        uint64_t b = buf[p];
        *out = (int64_t)((b >> 1) ^ (~(b & 1) + 1));
        c->pos = p + 1;
        return 0;
    }
    uint64_t n = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= c->len) { c->pos = p; return truncated(c); }
        unsigned char b = buf[p++];
        n |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = (int64_t)((n >> 1) ^ (~(n & 1) + 1));
            c->pos = p;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "Avro varint longer than 10 bytes at byte %zd", c->pos);
    return -1;
}

static inline int skip_varint(Cursor *c) {
    Py_ssize_t p = c->pos;
    while (p < c->len && c->buf[p] >= 0x80) p++;
    if (p >= c->len) { c->pos = p; return truncated(c); }
    c->pos = p + 1;
    return 0;
}

static inline int block_count(Cursor *c, int64_t *n) {
    if (read_long(c, n) < 0) return -1;
    if (*n < 0) {
        int64_t size;
        if (read_long(c, &size) < 0) return -1;
        *n = -*n;
    }
    return 0;
}

/* The span of a length-prefixed value (bytes, string). */
static inline int sized(Cursor *c, const unsigned char **start, Py_ssize_t *size) {
    int64_t n;
    if (read_long(c, &n) < 0) return -1;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "negative Avro length %lld at byte %zd", (long long)n, c->pos);
        return -1;
    }
    if (n > c->len - c->pos) return truncated(c);
    *start = c->buf + c->pos;
    *size = (Py_ssize_t)n;
    c->pos += (Py_ssize_t)n;
    return 0;
}

static inline int kept(const Node *n, int64_t key) {
    if (n->keep == NULL) return 1;
    Py_ssize_t lo = 0, hi = n->nkeep;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (n->keep[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo < n->nkeep && n->keep[lo] == key;
}

/* -- skipping ------------------------------------------------------------------------------------------ */

static int skip(const Node *n, Cursor *c);

static int skip_blocks(const Node *n, Cursor *c) {
    for (;;) {
        int64_t count;
        if (read_long(c, &count) < 0) return -1;
        if (count == 0) return 0;
        if (count < 0) {  /* the block carries its byte size: jump over it */
            int64_t size;
            if (read_long(c, &size) < 0) return -1;
            if (size < 0 || size > c->len - c->pos) return truncated(c);
            c->pos += (Py_ssize_t)size;
            continue;
        }
        if (check_block(n, c, count) < 0) return -1;
        for (int64_t i = 0; i < count; i++) {
            switch (n->kind) {
            case K_ARRAY:
                if (skip(n->children[0], c) < 0) return -1;
                break;
            case K_INT_LONG_MAP:
                if (skip_varint(c) < 0 || skip_varint(c) < 0) return -1;
                break;
            case K_INT_BYTES_MAP: {
                const unsigned char *s;
                Py_ssize_t size;
                if (skip_varint(c) < 0 || sized(c, &s, &size) < 0) return -1;
                break;
            }
            case K_KV_MAP:
                if (skip(n->children[0], c) < 0 || skip(n->children[1], c) < 0) return -1;
                break;
            default: {  /* K_MAP: string key, value */
                const unsigned char *s;
                Py_ssize_t size;
                if (sized(c, &s, &size) < 0 || skip(n->children[0], c) < 0) return -1;
            }
            }
        }
    }
}

static int skip(const Node *n, Cursor *c) {
    switch (n->kind) {
    case K_NULL:
        return 0;
    case K_BOOLEAN:
        if (c->pos >= c->len) return truncated(c);
        c->pos++;
        return 0;
    case K_LONG:
    case K_ENUM:
        return skip_varint(c);
    case K_FLOAT:
    case K_DOUBLE:
    case K_FIXED: {
        Py_ssize_t size = n->kind == K_FLOAT ? 4 : n->kind == K_DOUBLE ? 8 : n->size;
        if (size > c->len - c->pos) return truncated(c);
        c->pos += size;
        return 0;
    }
    case K_BYTES:
    case K_STRING: {
        const unsigned char *s;
        Py_ssize_t size;
        return sized(c, &s, &size);
    }
    case K_CONVERT:
    case K_SKIP:
        return skip(n->children[0], c);
    case K_OPTIONAL: {
        if (c->pos >= c->len) return truncated(c);
        int is_null = (c->buf[c->pos] == 0) == (n->flag != 0);
        c->pos++;
        return is_null ? 0 : skip(n->children[0], c);
    }
    case K_UNION: {
        int64_t index;
        if (read_long(c, &index) < 0) return -1;
        if (index < 0 || index >= n->nchildren) {
            PyErr_Format(PyExc_ValueError, "Avro union index %lld out of range", (long long)index);
            return -1;
        }
        return skip(n->children[index], c);
    }
    case K_RECORD:
        for (Py_ssize_t i = 0; i < n->nchildren; i++)
            if (skip(n->children[i], c) < 0) return -1;
        return 0;
    default:  /* arrays and maps */
        return skip_blocks(n, c);
    }
}

/* -- decoding ---------------------------------------------------------------------------------------- */

static PyObject *decode(const Node *n, Cursor *c);

static int dict_put(PyObject *d, PyObject *k, PyObject *v) {
    if (k == NULL || v == NULL) { Py_XDECREF(k); Py_XDECREF(v); return -1; }
    int rc = PyDict_SetItem(d, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    return rc;
}

/* One item of an array or map block into ``out`` (a list or a dict). */
static int decode_item(const Node *n, Cursor *c, PyObject *out) {
    switch (n->kind) {
    case K_ARRAY: {
        PyObject *v = decode(n->children[0], c);
        if (v == NULL) return -1;
        int rc = PyList_Append(out, v);
        Py_DECREF(v);
        return rc;
    }
    case K_INT_LONG_MAP: {
        int64_t k, v;
        if (read_long(c, &k) < 0) return -1;
        if (!kept(n, k)) return skip_varint(c);
        if (read_long(c, &v) < 0) return -1;
        return dict_put(out, PyLong_FromLongLong(k), PyLong_FromLongLong(v));
    }
    case K_INT_BYTES_MAP: {
        int64_t k;
        const unsigned char *s;
        Py_ssize_t size;
        if (read_long(c, &k) < 0 || sized(c, &s, &size) < 0) return -1;
        if (!kept(n, k)) return 0;
        return dict_put(out, PyLong_FromLongLong(k), PyBytes_FromStringAndSize((const char *)s, size));
    }
    case K_KV_MAP: {
        PyObject *k = decode(n->children[0], c);
        if (k == NULL) return -1;
        return dict_put(out, k, decode(n->children[1], c));
    }
    default: {  /* K_MAP */
        const unsigned char *s;
        Py_ssize_t size;
        if (sized(c, &s, &size) < 0) return -1;
        PyObject *k = PyUnicode_DecodeUTF8((const char *)s, size, NULL);
        if (k == NULL) return -1;
        return dict_put(out, k, decode(n->children[0], c));
    }
    }
}

static PyObject *decode_blocks(const Node *n, Cursor *c) {
    PyObject *out = n->kind == K_ARRAY ? PyList_New(0) : PyDict_New();
    if (out == NULL) return NULL;
    for (;;) {
        int64_t count;
        if (block_count(c, &count) < 0) goto fail;
        if (count == 0) return out;
        if (check_block(n, c, count) < 0) goto fail;
        for (int64_t i = 0; i < count; i++)
            if (decode_item(n, c, out) < 0) goto fail;
    }
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *decode(const Node *n, Cursor *c) {
    switch (n->kind) {
    case K_NULL:
        Py_RETURN_NONE;
    case K_BOOLEAN:
        if (c->pos >= c->len) { truncated(c); return NULL; }
        return PyBool_FromLong(c->buf[c->pos++] != 0);
    case K_LONG: {
        int64_t v;
        if (read_long(c, &v) < 0) return NULL;
        return PyLong_FromLongLong(v);
    }
    case K_FLOAT: {
        if (4 > c->len - c->pos) { truncated(c); return NULL; }
        uint32_t bits = 0;
        for (int i = 3; i >= 0; i--) bits = (bits << 8) | c->buf[c->pos + i];  /* little-endian */
        float v;
        memcpy(&v, &bits, sizeof v);
        c->pos += 4;
        return PyFloat_FromDouble((double)v);
    }
    case K_DOUBLE: {
        if (8 > c->len - c->pos) { truncated(c); return NULL; }
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--) bits = (bits << 8) | c->buf[c->pos + i];  /* little-endian */
        double v;
        memcpy(&v, &bits, sizeof v);
        c->pos += 8;
        return PyFloat_FromDouble(v);
    }
    case K_BYTES:
    case K_STRING: {
        const unsigned char *s;
        Py_ssize_t size;
        if (sized(c, &s, &size) < 0) return NULL;
        if (n->kind == K_BYTES) return PyBytes_FromStringAndSize((const char *)s, size);
        return PyUnicode_DecodeUTF8((const char *)s, size, NULL);
    }
    case K_FIXED: {
        if (n->size > c->len - c->pos) { truncated(c); return NULL; }
        PyObject *v = PyBytes_FromStringAndSize((const char *)c->buf + c->pos, n->size);
        c->pos += n->size;
        return v;
    }
    case K_CONVERT: {
        PyObject *raw = decode(n->children[0], c);
        if (raw == NULL) return NULL;
        PyObject *v = PyObject_CallOneArg(n->obj, raw);
        Py_DECREF(raw);
        return v;
    }
    case K_OPTIONAL: {
        if (c->pos >= c->len) { truncated(c); return NULL; }
        int is_null = (c->buf[c->pos] == 0) == (n->flag != 0);
        c->pos++;
        if (is_null) Py_RETURN_NONE;
        return decode(n->children[0], c);
    }
    case K_UNION: {
        int64_t index;
        if (read_long(c, &index) < 0) return NULL;
        if (index < 0 || index >= n->nchildren) {
            PyErr_Format(PyExc_ValueError, "Avro union index %lld out of range", (long long)index);
            return NULL;
        }
        return decode(n->children[index], c);
    }
    case K_RECORD: {
        if (n->flag) {
            PyObject *out = PyTuple_New(n->nchildren);
            if (out == NULL) return NULL;
            for (Py_ssize_t i = 0; i < n->nchildren; i++) {
                PyObject *v = decode(n->children[i], c);
                if (v == NULL) { Py_DECREF(out); return NULL; }
                PyTuple_SET_ITEM(out, i, v);
            }
            return out;
        }
        PyObject *out = PyDict_New();
        if (out == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n->nchildren; i++) {
            PyObject *v = decode(n->children[i], c);
            if (v == NULL || PyDict_SetItem(out, PyTuple_GET_ITEM(n->obj, i), v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(v);
        }
        return out;
    }
    case K_ENUM: {
        int64_t index;
        if (read_long(c, &index) < 0) return NULL;
        if (index < 0 || index >= PyTuple_GET_SIZE(n->obj)) {
            PyErr_Format(PyExc_ValueError, "Avro enum index %lld out of range", (long long)index);
            return NULL;
        }
        PyObject *v = PyTuple_GET_ITEM(n->obj, index);
        Py_INCREF(v);
        return v;
    }
    case K_SKIP:
        if (skip(n->children[0], c) < 0) return NULL;
        Py_RETURN_NONE;
    default:
        return decode_blocks(n, c);
    }
}

/* -- pruning decoded entries ---------------------------------------------------------------------------
 * A manifest entry's record can be tested against a filter before Python sees it: comparisons of integral
 * columns (int, long, date, time, timestamps) with a literal, combined by and/or, against the column's
 * value/null/NaN counts and lower/upper bounds, by the rules of floe.expressions.metrics_evaluator. Only
 * what those metrics prove cannot match is dropped; anything else (another predicate, a bound of an
 * unexpected size, an unknown record count, a deleted entry) is kept for the Python evaluator, which still
 * runs on every kept entry. The filter only saves building and testing entries that could never pass. */

enum { F_TRUE, F_AND, F_OR, F_CMP };
enum { OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ };

typedef struct Filter {
    int kind;
    struct Filter *a, *b;
    PyObject *key;  /* the field id as a Python int: the metrics maps' key */
    int op;
    int64_t literal;
    Py_ssize_t width;  /* bytes of the column's single-value form: 4 or 8 */
} Filter;

/* Where the filter's inputs sit: entry fields (status, data_file) and data_file fields, -1 when absent. */
enum { P_STATUS, P_DATA_FILE, P_RECORD_COUNT, P_VALUE_COUNTS, P_NULL_COUNTS, P_NAN_COUNTS, P_LOWER, P_UPPER,
       P_COUNT };

static void filter_free(Filter *f) {
    if (f == NULL) return;
    filter_free(f->a);
    filter_free(f->b);
    Py_XDECREF(f->key);
    PyMem_Free(f);
}

static Filter *filter_from_spec(PyObject *spec, int depth) {
    if (depth > 200) { PyErr_SetString(PyExc_ValueError, "prefilter nested too deeply"); return NULL; }
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
        PyErr_SetString(PyExc_TypeError, "a prefilter node is a tuple starting with its tag");
        return NULL;
    }
    const char *tag = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
    if (tag == NULL) return NULL;
    Py_ssize_t size = PyTuple_GET_SIZE(spec);
    Filter *f = PyMem_Calloc(1, sizeof(Filter));
    if (f == NULL) { PyErr_NoMemory(); return NULL; }
    if (strcmp(tag, "true") == 0) {
        f->kind = F_TRUE;
        return f;
    }
    if ((strcmp(tag, "and") == 0 || strcmp(tag, "or") == 0) && size == 3) {
        f->kind = tag[0] == 'a' ? F_AND : F_OR;
        f->a = filter_from_spec(PyTuple_GET_ITEM(spec, 1), depth + 1);
        f->b = f->a == NULL ? NULL : filter_from_spec(PyTuple_GET_ITEM(spec, 2), depth + 1);
        if (f->b == NULL) { filter_free(f); return NULL; }
        return f;
    }
    if (strcmp(tag, "cmp") == 0 && size == 5) {  /* ("cmp", field id, op, literal, width) */
        static const char *ops[] = {"lt", "le", "gt", "ge", "eq"};
        const char *op = PyUnicode_Check(PyTuple_GET_ITEM(spec, 2)) ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 2)) : NULL;
        f->kind = F_CMP;
        f->op = -1;
        for (int i = 0; op != NULL && i < 5; i++)
            if (strcmp(op, ops[i]) == 0) f->op = i;
        f->key = PyTuple_GET_ITEM(spec, 1);
        Py_INCREF(f->key);
        f->literal = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, 3));
        f->width = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 4));
        if (PyErr_Occurred() || f->op < 0 || !PyLong_Check(f->key) || (f->width != 4 && f->width != 8)) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "bad prefilter comparison %R", spec);
            filter_free(f);
            return NULL;
        }
        return f;
    }
    PyErr_Format(PyExc_ValueError, "unknown prefilter node %R", spec);
    filter_free(f);
    return NULL;
}

/* The int-keyed map at data_file field ``index`` (NULL when absent, not read, or not a dict). */
static PyObject *metrics_map(PyObject *data_file, Py_ssize_t index) {
    if (index < 0 || index >= PyTuple_GET_SIZE(data_file)) return NULL;
    PyObject *m = PyTuple_GET_ITEM(data_file, index);
    return PyDict_Check(m) ? m : NULL;
}

/* 1: found (``*out`` set), 0: not there, -1: error. */
static int map_count(PyObject *map, PyObject *key, long long *out) {
    if (map == NULL) return 0;
    PyObject *v = PyDict_GetItemWithError(map, key);
    if (v == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyLong_Check(v)) return 0;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (*out == -1 && PyErr_Occurred()) return -1;
    return overflow ? 0 : 1;
}

static int map_bound(PyObject *map, PyObject *key, Py_ssize_t width, int64_t *out) {
    if (map == NULL) return 0;
    PyObject *v = PyDict_GetItemWithError(map, key);
    if (v == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyBytes_Check(v) || PyBytes_GET_SIZE(v) != width) return 0;  /* the Python evaluator decides */
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(v);
    uint64_t bits = 0;
    for (Py_ssize_t i = width - 1; i >= 0; i--) bits = (bits << 8) | b[i];
    if (width == 4) *out = (int64_t)(int32_t)(uint32_t)bits;
    else *out = (int64_t)bits;
    return 1;
}

static int may_match(const Filter *f, PyObject *data_file, const Py_ssize_t *paths) {
    switch (f->kind) {
    case F_TRUE:
        return 1;
    case F_AND: {
        int a = may_match(f->a, data_file, paths);
        return a <= 0 ? a : may_match(f->b, data_file, paths);
    }
    case F_OR: {
        int a = may_match(f->a, data_file, paths);
        return a != 0 ? a : may_match(f->b, data_file, paths);
    }
    default: break;
    }
    long long values, n;
    int found = map_count(metrics_map(data_file, paths[P_VALUE_COUNTS]), f->key, &values);
    if (found < 0) return -1;
    if (found) {  /* comparisons never hold for null or NaN */
        int rc = map_count(metrics_map(data_file, paths[P_NULL_COUNTS]), f->key, &n);
        if (rc < 0) return -1;
        if (rc && n == values) return 0;
        rc = map_count(metrics_map(data_file, paths[P_NAN_COUNTS]), f->key, &n);
        if (rc < 0) return -1;
        if (rc && n == values) return 0;
    }
    int64_t bound;
    if (f->op == OP_LT || f->op == OP_LE || f->op == OP_EQ) {
        int rc = map_bound(metrics_map(data_file, paths[P_LOWER]), f->key, f->width, &bound);
        if (rc < 0) return -1;
        if (rc && (f->op == OP_LT ? !(bound < f->literal) : !(bound <= f->literal))) return 0;
    }
    if (f->op == OP_GT || f->op == OP_GE || f->op == OP_EQ) {
        int rc = map_bound(metrics_map(data_file, paths[P_UPPER]), f->key, f->width, &bound);
        if (rc < 0) return -1;
        if (rc && (f->op == OP_GT ? !(bound > f->literal) : !(bound >= f->literal))) return 0;
    }
    return 1;
}

/* 1: keep the entry, 0: its metrics prove no row matches, -1: error. */
static int entry_may_match(const Filter *f, PyObject *rec, const Py_ssize_t *paths) {
    if (!PyTuple_Check(rec) || paths[P_DATA_FILE] >= PyTuple_GET_SIZE(rec)) return 1;
    if (paths[P_STATUS] >= 0 && paths[P_STATUS] < PyTuple_GET_SIZE(rec)) {
        PyObject *status = PyTuple_GET_ITEM(rec, paths[P_STATUS]);
        int overflow;
        /* deleted entries are kept: planning does not count them as pruned */
        if (PyLong_Check(status) && PyLong_AsLongLongAndOverflow(status, &overflow) == 2) return 1;
    }
    PyObject *df = PyTuple_GET_ITEM(rec, paths[P_DATA_FILE]);
    if (!PyTuple_Check(df) || paths[P_RECORD_COUNT] < 0 || paths[P_RECORD_COUNT] >= PyTuple_GET_SIZE(df)) return 1;
    PyObject *rows = PyTuple_GET_ITEM(df, paths[P_RECORD_COUNT]);
    if (!PyLong_Check(rows)) return 1;
    int overflow;
    long long count = PyLong_AsLongLongAndOverflow(rows, &overflow);
    if (count <= 0 || overflow) {  /* empty or unknown row count: the Python evaluator's rules */
        if (PyErr_Occurred()) return -1;
        return 1;
    }
    return may_match(f, df, paths);
}

/* -- the Program type ------------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    Node *root;
    Filter *filter;          /* records() drops entries it proves cannot match (NULL: none) */
    Node *probe;             /* the plan with only the filter's inputs built (NULL: test full records) */
    Py_ssize_t paths[P_COUNT];
} Program;

static void Program_dealloc(Program *self) {
    node_free(self->root);
    node_free(self->probe);
    filter_free(self->filter);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Program(plan, prefilter=None, paths=None, probe=None): paths gives P_COUNT positions (see the enum) in
 * the records; probe, the same plan with every field the filter does not read skipped. */
static PyObject *Program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *plan, *prefilter = Py_None, *paths = Py_None, *probe = Py_None;
    static char *names[] = {"plan", "prefilter", "paths", "probe", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:Program", names, &plan, &prefilter, &paths, &probe))
        return NULL;
    Program *self = (Program *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->root = node_from_plan(plan, 0);
    if (self->root == NULL) { Py_DECREF(self); return NULL; }
    if (prefilter != Py_None) {
        if (!PyTuple_Check(paths) || PyTuple_GET_SIZE(paths) != P_COUNT) {
            PyErr_Format(PyExc_ValueError, "a prefilter needs %d record positions", (int)P_COUNT);
            Py_DECREF(self);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < P_COUNT; i++) {
            self->paths[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(paths, i));
            if (self->paths[i] == -1 && PyErr_Occurred()) { Py_DECREF(self); return NULL; }
        }
        if (self->paths[P_DATA_FILE] < 0) {
            PyErr_SetString(PyExc_ValueError, "a prefilter needs the data_file position");
            Py_DECREF(self);
            return NULL;
        }
        self->filter = filter_from_spec(prefilter, 0);
        if (self->filter == NULL) { Py_DECREF(self); return NULL; }
        if (probe != Py_None) {
            self->probe = node_from_plan(probe, 0);
            if (self->probe == NULL) { Py_DECREF(self); return NULL; }
        }
    }
    return (PyObject *)self;
}

/* program(buf, pos) -> (value, position after it): the Reader signature of the Python readers. */
static PyObject *Program_call(Program *self, PyObject *args, PyObject *kwargs) {
    Py_buffer view;
    Py_ssize_t pos;
    static char *names[] = {"buf", "pos", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*n", names, &view, &pos)) return NULL;
    if (pos < 0 || pos > view.len) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "position %zd outside the %zd-byte buffer", pos, view.len);
        return NULL;
    }
    Cursor c = {view.buf, view.len, pos};
    PyObject *v = decode(self->root, &c);
    PyBuffer_Release(&view);
    if (v == NULL) return NULL;
    PyObject *out = Py_BuildValue("(Nn)", v, c.pos);
    return out;
}

/* program.records(block, count) -> list of the ``count`` consecutive values from the start of ``block``
 * (those the prefilter keeps, when the program has one). */
static PyObject *Program_records(Program *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n:records", &view, &count)) return NULL;
    Py_ssize_t least = self->root->min_size;
    if (count < 0 || (least > 0 ? count > view.len / least : count > (1 << 24))) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "an Avro block of %zd bytes cannot hold %zd records", view.len, count);
        return NULL;
    }
    Cursor c = {view.buf, view.len, 0};
    PyObject *out = PyList_New(count);
    if (out == NULL) { PyBuffer_Release(&view); return NULL; }
    Py_ssize_t kept_count = 0, probed = 0;
    /* Probing decodes only the filter's inputs first, then the whole record if it may match: a win while
     * most records are dropped. Once more than half of 64 probed records were kept, records are decoded
     * whole and tested once for the rest of the block. */
    int probing = self->probe != NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *v;
        int keep;
        if (probing) {
            Py_ssize_t start = c.pos;
            PyObject *inputs = decode(self->probe, &c);
            keep = inputs == NULL ? -1 : entry_may_match(self->filter, inputs, self->paths);
            Py_XDECREF(inputs);
            v = NULL;
            if (keep > 0) {
                c.pos = start;
                v = decode(self->root, &c);
                if (v == NULL) keep = -1;
            }
            if (++probed == 64 && kept_count + (keep > 0) > 32) probing = 0;
        } else {
            v = decode(self->root, &c);
            keep = v == NULL ? -1 : self->filter == NULL ? 1 : entry_may_match(self->filter, v, self->paths);
        }
        if (keep < 0) {
            Py_XDECREF(v);
            Py_SET_SIZE(out, kept_count);  /* the unset slots are NULL */
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        if (keep) PyList_SET_ITEM(out, kept_count++, v);
        else Py_XDECREF(v);
    }
    PyBuffer_Release(&view);
    if (kept_count < count) Py_SET_SIZE(out, kept_count);  /* allocated for count: shrinking keeps it valid */
    return out;
}

static PyMethodDef Program_methods[] = {
    {"records", (PyCFunction)Program_records, METH_VARARGS,
     "records(block, count): the first count values of an Avro block, as a list"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "floe.serde._avro_native.Program",
    .tp_doc = "Program(plan): an Avro value decoder compiled from a plan (floe.serde.avro_decoder)",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Program_new,
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_call = (ternaryfunc)Program_call,
    .tp_methods = Program_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_avro_native", "Avro binary decoding in C for floe.serde.avro_decoder.", -1, NULL,
};

PyMODINIT_FUNC PyInit__avro_native(void) {
    if (PyType_Ready(&ProgramType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
