package floe.spark.jvm;

/**
 * Whether a row's position is not among its data file's deleted positions: the lookup of an exact size-slot
 * table of position-delete words (floe/spark/scan/position_bitmaps.py, SizeSlots with exact=true), read
 * from a Spark broadcast variable instead of a one-row relation joined to every row.
 *
 * Words: header longs 0-3 are the size slots' offset and modulus and the hash slots' offset and modulus;
 * size slot (offset + size mod modulus) holds the file's word base and count (base << 32 | count; 0 for a
 * file without deletes), or -2 for a size several files share, whose rows take hash slot (offset +
 * xxhash64(path) mod modulus) instead; bit (pos % 64) of word (base + pos / 64) is set for a deleted
 * position. Compiled at run time by Spark's own Janino
 * (floe/spark/runtime/jvm_helpers.py): Java 1.4-style source, no generics or lambdas.
 */
public final class UndeletedPositions implements java.util.function.LongBinaryOperator,
        org.apache.spark.sql.api.java.UDF2, org.apache.spark.sql.api.java.UDF3, java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final long COUNT_MASK = 0xffffffffL;

    private final org.apache.spark.broadcast.Broadcast words; // long[]
    private transient long[] local;

    private UndeletedPositions(org.apache.spark.broadcast.Broadcast words) {
        this.words = words;
    }

    /** How plans show the lookup (Spark prints the object the filter calls). */
    public String toString() {
        return "floe_undeleted_positions";
    }

    /** The same in every plan: a hash that changed with each table state could reorder generated code. */
    public int hashCode() {
        return 0x5eed;
    }

    /**
     * The row filter over the named columns (file size in bytes and 0-based position, longs; the file's path,
     * or null when no size is shared) for these words.
     *
     * Where no size is shared the generated code calls applyAsLong(size, position) with primitive longs on
     * this object, seen by the code as a java.util.function.LongBinaryOperator (a class every loader has): a
     * Java UDF boxes both arguments and its result, three objects a row (a 2M-row read allocated 140 MB of
     * Longs, and the young collections that came with them). A shared size keeps the UDF, with the path's hash.
     */
    public static org.apache.spark.sql.Column filter(org.apache.spark.api.java.JavaSparkContext context,
            byte[] littleEndianWords, String size, String position, String path) {
        java.nio.LongBuffer longs =
            java.nio.ByteBuffer.wrap(littleEndianWords).order(java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer();
        long[] unpacked = new long[longs.remaining()];
        longs.get(unpacked);
        UndeletedPositions lookup = new UndeletedPositions(context.broadcast(unpacked));
        org.apache.spark.sql.Column sizes = org.apache.spark.sql.functions.col(size);
        org.apache.spark.sql.Column positions = org.apache.spark.sql.functions.col(position);
        if (path == null) {
            org.apache.spark.sql.Column called = calledWithLongs(lookup, sizes, positions);
            if (called != null) {
                return called;
            }
            return org.apache.spark.sql.functions.udf(
                (org.apache.spark.sql.api.java.UDF2) lookup, org.apache.spark.sql.types.DataTypes.BooleanType)
                .asNonNullable().apply(new org.apache.spark.sql.Column[] {sizes, positions});
        }
        org.apache.spark.sql.Column hashes = org.apache.spark.sql.functions.xxhash64(
            new org.apache.spark.sql.Column[] {org.apache.spark.sql.functions.col(path)});
        return org.apache.spark.sql.functions.udf(
            (org.apache.spark.sql.api.java.UDF3) lookup, org.apache.spark.sql.types.DataTypes.BooleanType)
            .asNonNullable().apply(new org.apache.spark.sql.Column[] {sizes, positions, hashes});
    }

    /**
     * applyAsLong(size, position) = 1 as a Catalyst Invoke of the lookup, a literal object, or null where this
     * Spark's internals (reached by reflection: they are not public API) differ: the UDF then serves.
     */
    private static org.apache.spark.sql.Column calledWithLongs(UndeletedPositions lookup,
            org.apache.spark.sql.Column sizes, org.apache.spark.sql.Column positions) {
        try {
            Class utils = Class.forName("org.apache.spark.sql.classic.ExpressionUtils");
            java.lang.reflect.Method toExpression =
                utils.getMethod("expression", new Class[] {org.apache.spark.sql.Column.class});
            java.lang.reflect.Method toColumn = utils.getMethod("column",
                new Class[] {org.apache.spark.sql.catalyst.expressions.Expression.class});
            java.util.ArrayList arguments = new java.util.ArrayList();
            arguments.add(toExpression.invoke(null, new Object[] {sizes}));
            arguments.add(toExpression.invoke(null, new Object[] {positions}));
            Object target = new org.apache.spark.sql.catalyst.expressions.Literal(lookup,
                new org.apache.spark.sql.types.ObjectType(java.util.function.LongBinaryOperator.class));
            java.lang.reflect.Constructor invoke =
                Class.forName("org.apache.spark.sql.catalyst.expressions.objects.Invoke").getConstructor(new Class[] {
                    org.apache.spark.sql.catalyst.expressions.Expression.class, String.class,
                    org.apache.spark.sql.types.DataType.class, scala.collection.immutable.Seq.class,
                    scala.collection.immutable.Seq.class, Boolean.TYPE, Boolean.TYPE, Boolean.TYPE});
            Object called = invoke.newInstance(new Object[] {target, "applyAsLong",
                org.apache.spark.sql.types.DataTypes.LongType,
                scala.jdk.javaapi.CollectionConverters.asScala(arguments).toList(),
                scala.collection.immutable.Nil$.MODULE$, Boolean.FALSE, Boolean.FALSE, Boolean.TRUE});
            return ((org.apache.spark.sql.Column) toColumn.invoke(null, new Object[] {called}))
                .equalTo(Long.valueOf(1L));
        } catch (Exception e) {
            return null;
        } catch (LinkageError e) {
            return null;
        }
    }

    /** 1 when the row at position of the file of this size is kept, 0 when deleted. */
    public long applyAsLong(long size, long position) {
        return kept(size, position, false, 0L) ? 1L : 0L;
    }

    public Object call(Object size, Object position) {
        return Boolean.valueOf(kept(((Long) size).longValue(), ((Long) position).longValue(), false, 0L));
    }

    public Object call(Object size, Object position, Object pathHash) {
        return Boolean.valueOf(kept(((Long) size).longValue(), ((Long) position).longValue(), pathHash != null,
            pathHash == null ? 0L : ((Long) pathHash).longValue()));
    }

    private boolean kept(long size, long pos, boolean hashed, long pathHash) {
        long[] w = local;
        if (w == null) {
            w = (long[]) words.value();
            local = w;
        }
        long slot = w[0] + Math.floorMod(size, w[1]);
        if (slot < 0 || slot >= w.length) {
            return true;
        }
        long held = w[(int) slot];
        if (held == -2L && hashed) {
            long other = w[2] + Math.floorMod(pathHash, w[3]);
            if (other < 0 || other >= w.length) {
                return true;
            }
            held = w[(int) other];
        }
        long word = pos >>> 6;
        if (pos < 0 || word >= (held & COUNT_MASK)) {
            return true;
        }
        long index = (held >>> 32) + word;
        if (index >= w.length) {
            return true;
        }
        return ((w[(int) index] >>> (pos & 63)) & 1L) == 0L;
    }
}
