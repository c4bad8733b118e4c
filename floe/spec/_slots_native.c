/* Constructors of slotted value classes that fill the slots directly (floe.spec.fast_new).

A frozen dataclass's __init__ sets each field through object.__setattr__: about 0.2 us a field, which at a
million manifest entries (a DataFile has 21 fields) is seconds of planning. A Constructor made for such a
class takes the field values positionally, in slot order, allocates the instance and stores them: the
instance is the same as the one __init__ builds (floe.spec.fast_new checks the class is one it can build).

With acyclic set, the instance is also untracked by the cyclic garbage collector: for frozen values whose
fields cannot refer back to them (files, entries, scan tasks), tracking only makes every collection walk
millions of objects that can never be garbage in a cycle. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define MAX_SLOTS 64

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    int acyclic;
    Py_ssize_t count;
    Py_ssize_t offsets[MAX_SLOTS];
} Constructor;

static PyObject *Constructor_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Constructor *c = (Constructor *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError, "%s constructor takes positional arguments only", c->cls->tp_name);
        return NULL;
    }
    if (n != c->count) {
        PyErr_Format(PyExc_TypeError, "%s constructor takes %zd arguments (%zd given)", c->cls->tp_name,
                     c->count, n);
        return NULL;
    }
    PyObject *obj = c->cls->tp_alloc(c->cls, 0);
    if (obj == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(args[i]);
        *(PyObject **)((char *)obj + c->offsets[i]) = args[i];
    }
    if (c->acyclic && PyObject_IS_GC(obj)) PyObject_GC_UnTrack(obj);
    return obj;
}

static void Constructor_dealloc(Constructor *self) {
    Py_XDECREF(self->cls);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Constructor_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"cls", "slots", "acyclic", NULL};
    PyObject *cls, *slots;
    int acyclic = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!|p", keywords, &PyType_Type, &cls, &PyTuple_Type, &slots,
                                     &acyclic))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(slots);
    if (n > MAX_SLOTS) {
        PyErr_Format(PyExc_ValueError, "%s has more than %d slots", t->tp_name, MAX_SLOTS);
        return NULL;
    }
    if (t->tp_alloc == NULL || t->tp_itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s is not a fixed-size class", t->tp_name);
        return NULL;
    }
    Constructor *self = (Constructor *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = Constructor_vectorcall;
    self->acyclic = acyclic;
    self->count = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        /* Each name must be one of the class's object slots: a member descriptor (what the class attribute
           of a slot is) of an object field inside the instance. */
        PyObject *descr = PyUnicode_Check(name) ? PyObject_GetAttr(cls, name) : NULL;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
            || !PyType_IsSubtype(t, PyDescr_TYPE(descr))) {
            Py_XDECREF(descr);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%R is not a slot of %s", name, t->tp_name);
            Py_DECREF(self);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        Py_ssize_t offset = member->offset;
        int object_slot = member->type == T_OBJECT_EX && !(member->flags & READONLY);
        Py_DECREF(descr); /* the class keeps it */
        if (!object_slot || offset < (Py_ssize_t)sizeof(PyObject)
            || offset + (Py_ssize_t)sizeof(PyObject *) > t->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "%R is not an object slot of %s", name, t->tp_name);
            Py_DECREF(self);
            return NULL;
        }
        self->offsets[i] = offset;
    }
    Py_INCREF(cls);
    self->cls = t;
    return (PyObject *)self;
}

static PyTypeObject ConstructorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "floe.spec._slots_native.Constructor",
    .tp_doc = "Constructor(cls, slots, acyclic=False): builds cls from the slots' values, positionally",
    .tp_basicsize = sizeof(Constructor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Constructor, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = Constructor_new,
    .tp_dealloc = (destructor)Constructor_dealloc,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_slots_native", "Slot-filling constructors for floe.spec.fast_new.", -1, NULL,
};

PyMODINIT_FUNC PyInit__slots_native(void) {
    if (PyType_Ready(&ConstructorType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ConstructorType);
    if (PyModule_AddObject(m, "Constructor", (PyObject *)&ConstructorType) < 0) {
        Py_DECREF(&ConstructorType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
