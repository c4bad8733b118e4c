/* Manifest entries from decoded manifest_entry records, in C (floe.serde.manifest_avro).

The same steps as the Python build function manifest_avro generates for a writer schema (that function is
the reference and the fallback): map the status and content codes and the file format, inherit the
snapshot id and sequence numbers from the manifest (spec "Sequence Number Inheritance") and first row ids
(spec "Row Lineage"), then construct the DataFile and the ManifestEntry. At a million entries the Python
function is seconds of a full-table plan.

Errors are the ones the Python function raises on a damaged record (IndexError, TypeError, ValueError),
which manifest_avro turns into InvalidMetadataError naming the file. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Positions in the layout tuple: manifest_entry fields, then data_file fields (-1: not in the schema). */
enum {
    L_STATUS, L_DATA_FILE, L_SNAPSHOT, L_SEQ, L_FSEQ,
    L_CONTENT, L_PATH, L_FORMAT, L_PARTITION, L_RECORD_COUNT, L_SIZE,
    L_SIZES, L_VALUES, L_NULLS, L_NANS, L_LOWER, L_UPPER,
    L_KEY_METADATA, L_SPLITS, L_EQUALITY, L_SORT_ORDER, L_FIRST_ROW_ID, L_REFERENCED, L_OFFSET, L_CONTENT_SIZE,
    L_COUNT
};

typedef struct {
    PyObject_HEAD
    Py_ssize_t at[L_COUNT];
    PyObject *status_of;  /* tuple: status code -> ManifestEntryStatus */
    PyObject *content_of; /* tuple: content code -> FileContent */
    PyObject *data;       /* FileContent.DATA */
    PyObject *added;      /* ManifestEntryStatus.ADDED */
    PyObject *formats;    /* dict: format text -> FileFormat */
    PyObject *file_format;    /* FileFormat (for text the dict lacks: raises ValueError) */
    PyObject *read_partition; /* callable or None (the decoded record is the partition tuple) */
    PyObject *new_df, *new_entry;
} Builder;

static void Builder_dealloc(Builder *self) {
    Py_XDECREF(self->status_of);
    Py_XDECREF(self->content_of);
    Py_XDECREF(self->data);
    Py_XDECREF(self->added);
    Py_XDECREF(self->formats);
    Py_XDECREF(self->file_format);
    Py_XDECREF(self->read_partition);
    Py_XDECREF(self->new_df);
    Py_XDECREF(self->new_entry);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Builder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *layout, *status_of, *content_of, *data, *added, *formats, *file_format, *read_partition, *new_df,
        *new_entry;
    if (!PyArg_ParseTuple(args, "O!O!O!OOO!OOOO", &PyTuple_Type, &layout, &PyTuple_Type, &status_of, &PyTuple_Type,
                          &content_of, &data, &added, &PyDict_Type, &formats, &file_format, &read_partition,
                          &new_df, &new_entry))
        return NULL;
    if (PyTuple_GET_SIZE(layout) != L_COUNT) {
        PyErr_Format(PyExc_ValueError, "layout has %zd positions, expected %d", PyTuple_GET_SIZE(layout), L_COUNT);
        return NULL;
    }
    Builder *self = (Builder *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    for (int i = 0; i < L_COUNT; i++) {
        Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(self);
            return NULL;
        }
        self->at[i] = v;
    }
    if (self->at[L_STATUS] < 0 || self->at[L_DATA_FILE] < 0 || self->at[L_PATH] < 0 || self->at[L_FORMAT] < 0
        || self->at[L_RECORD_COUNT] < 0 || self->at[L_SIZE] < 0) {
        PyErr_SetString(PyExc_ValueError, "layout lacks a required manifest field");
        Py_DECREF(self);
        return NULL;
    }
#define KEEP(name) Py_INCREF(name); self->name = name
    KEEP(status_of); KEEP(content_of); KEEP(data); KEEP(added); KEEP(formats); KEEP(file_format);
    KEEP(read_partition); KEEP(new_df); KEEP(new_entry);
#undef KEEP
    return (PyObject *)self;
}

/* rec[at] as a borrowed reference; None for a field the schema lacks. */
static PyObject *field(PyObject *rec, Py_ssize_t at) {
    if (at < 0) return Py_None;
    if (at >= PyTuple_GET_SIZE(rec)) {
        PyErr_SetString(PyExc_IndexError, "record field out of range");
        return NULL;
    }
    return PyTuple_GET_ITEM(rec, at);
}

/* table[code] for a small non-negative int code (borrowed). */
static PyObject *code_of(PyObject *table, PyObject *code, const char *what) {
    if (!PyLong_Check(code)) {
        PyErr_Format(PyExc_TypeError, "%s code is not an int", what);
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(code);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= PyTuple_GET_SIZE(table)) {
        PyErr_Format(PyExc_IndexError, "%s code %zd is not defined", what, i);
        return NULL;
    }
    return PyTuple_GET_ITEM(table, i);
}

/* None or tuple(value) (new reference). */
static PyObject *tuple_or_none(PyObject *value) {
    if (value == Py_None) return Py_NewRef(Py_None);
    return PySequence_Tuple(value);
}

static PyObject *build_one(Builder *b, PyObject *rec, PyObject *spec_id, PyObject *inherited_snapshot,
                           PyObject *manifest_seq, PyObject *next_row_id) {
    if (!PyTuple_Check(rec)) {
        PyErr_SetString(PyExc_TypeError, "manifest entry is not a record");
        return NULL;
    }
    const Py_ssize_t *at = b->at;
    PyObject *f = field(rec, at[L_DATA_FILE]);
    if (f == NULL) return NULL;
    if (!PyTuple_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "data_file is not a record");
        return NULL;
    }
    PyObject *status_code = field(rec, at[L_STATUS]);
    if (status_code == NULL) return NULL;
    PyObject *status = code_of(b->status_of, status_code, "status");
    if (status == NULL) return NULL;
    PyObject *content = b->data;
    if (at[L_CONTENT] >= 0) {
        PyObject *code = field(f, at[L_CONTENT]);
        if (code == NULL) return NULL;
        if (code == Py_None) content = PyTuple_GET_ITEM(b->content_of, 0); /* absent: data (v1) */
        else if ((content = code_of(b->content_of, code, "content")) == NULL) return NULL;
    }
    PyObject *fmt_text = field(f, at[L_FORMAT]);
    if (fmt_text == NULL) return NULL;
    PyObject *fmt = PyUnicode_Check(fmt_text) ? PyDict_GetItemWithError(b->formats, fmt_text) : NULL;
    if (fmt != NULL) Py_INCREF(fmt);
    else if (PyErr_Occurred()) return NULL;
    else if ((fmt = PyObject_CallOneArg(b->file_format, fmt_text)) == NULL) return NULL;

    PyObject *out = NULL, *part = NULL, *splits = NULL, *equality = NULL, *first_row_id = NULL, *data_file = NULL;
    PyObject *record_count = field(f, at[L_RECORD_COUNT]);
    if (record_count == NULL) goto done;
    first_row_id = field(f, at[L_FIRST_ROW_ID]);
    if (first_row_id == NULL) goto done;
    Py_INCREF(first_row_id);
    if (first_row_id == Py_None && content == b->data) {
        PyObject *next = PyList_GET_ITEM(next_row_id, 0);
        if (next != Py_None) {
            PyObject *advanced = PyNumber_Add(next, record_count);
            if (advanced == NULL) goto done;
            Py_SETREF(first_row_id, Py_NewRef(next));
            PyList_SetItem(next_row_id, 0, advanced); /* steals advanced; releases the old value */
        }
    }
    PyObject *snap = field(rec, at[L_SNAPSHOT]);
    PyObject *seq = field(rec, at[L_SEQ]);
    PyObject *fseq = field(rec, at[L_FSEQ]);
    if (snap == NULL || seq == NULL || fseq == NULL) goto done;
    if (snap == Py_None) snap = inherited_snapshot;
    if (manifest_seq != Py_None) {
        int overflow = 0;
        long number = PyLong_Check(manifest_seq) ? PyLong_AsLongAndOverflow(manifest_seq, &overflow) : -1;
        if (number == -1 && PyErr_Occurred()) goto done;
        int v1 = !overflow && number == 0;
        if (status == b->added || v1) {
            /* Spec: null sequence numbers of ADDED entries inherit the manifest's; v1 manifests (0) too. */
            if (seq == Py_None) seq = manifest_seq;
            if (fseq == Py_None) fseq = manifest_seq;
        }
    }
    if (at[L_PARTITION] < 0) {
        part = PyTuple_New(0);
    } else {
        PyObject *raw = field(f, at[L_PARTITION]);
        if (raw == NULL) goto done;
        part = b->read_partition == Py_None ? Py_NewRef(raw) : PyObject_CallOneArg(b->read_partition, raw);
    }
    if (part == NULL) goto done;
    PyObject *raw_splits = field(f, at[L_SPLITS]), *raw_equality = field(f, at[L_EQUALITY]);
    if (raw_splits == NULL || raw_equality == NULL) goto done;
    if ((splits = tuple_or_none(raw_splits)) == NULL || (equality = tuple_or_none(raw_equality)) == NULL) goto done;
    PyObject *df_args[21];
    static const int from_record[] = {L_PATH, L_SIZE, L_SIZES, L_VALUES, L_NULLS, L_NANS, L_LOWER, L_UPPER,
                                      L_KEY_METADATA, L_SORT_ORDER, L_REFERENCED, L_OFFSET, L_CONTENT_SIZE};
    PyObject *values[L_COUNT];
    for (size_t i = 0; i < sizeof(from_record) / sizeof(from_record[0]); i++) {
        if ((values[from_record[i]] = field(f, at[from_record[i]])) == NULL) goto done;
    }
    /* DataFile fields in declaration order (floe.spec.manifest.DataFile). */
    df_args[0] = content;
    df_args[1] = values[L_PATH];
    df_args[2] = fmt;
    df_args[3] = part;
    df_args[4] = record_count;
    df_args[5] = values[L_SIZE];
    df_args[6] = values[L_SIZES];
    df_args[7] = values[L_VALUES];
    df_args[8] = values[L_NULLS];
    df_args[9] = values[L_NANS];
    df_args[10] = values[L_LOWER];
    df_args[11] = values[L_UPPER];
    df_args[12] = values[L_KEY_METADATA];
    df_args[13] = splits;
    df_args[14] = equality;
    df_args[15] = values[L_SORT_ORDER];
    df_args[16] = spec_id;
    df_args[17] = first_row_id;
    df_args[18] = values[L_REFERENCED];
    df_args[19] = values[L_OFFSET];
    df_args[20] = values[L_CONTENT_SIZE];
    data_file = PyObject_Vectorcall(b->new_df, df_args, 21, NULL);
    if (data_file == NULL) goto done;
    PyObject *entry_args[5] = {status, snap, seq, fseq, data_file};
    out = PyObject_Vectorcall(b->new_entry, entry_args, 5, NULL);
done:
    Py_XDECREF(fmt);
    Py_XDECREF(part);
    Py_XDECREF(splits);
    Py_XDECREF(equality);
    Py_XDECREF(first_row_id);
    Py_XDECREF(data_file);
    return out;
}

static PyObject *Builder_build(Builder *self, PyObject *args) {
    PyObject *records, *spec_id, *inherited_snapshot, *manifest_seq, *next_row_id;
    if (!PyArg_ParseTuple(args, "O!OOOO!", &PyList_Type, &records, &spec_id, &inherited_snapshot, &manifest_seq,
                          &PyList_Type, &next_row_id))
        return NULL;
    if (PyList_GET_SIZE(next_row_id) != 1) {
        PyErr_SetString(PyExc_ValueError, "next_row_id must be a one-element list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(records);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = build_one(self, PyList_GET_ITEM(records, i), spec_id, inherited_snapshot, manifest_seq,
                                    next_row_id);
        if (entry == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, entry);
    }
    return out;
}

static PyMethodDef Builder_methods[] = {
    {"build", (PyCFunction)Builder_build, METH_VARARGS,
     "build(records, spec_id, inherited_snapshot_id, manifest_sequence_number, next_row_id): the entries"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "floe.serde._entries_native.Builder",
    .tp_doc = "Builder(layout, ...): manifest entries from decoded records (floe.serde.manifest_avro)",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Builder_new,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_methods = Builder_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_entries_native", "Manifest entries from decoded records for floe.serde.manifest_avro.",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__entries_native(void) {
    if (PyType_Ready(&BuilderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&BuilderType);
    if (PyModule_AddObject(m, "Builder", (PyObject *)&BuilderType) < 0) {
        Py_DECREF(&BuilderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
