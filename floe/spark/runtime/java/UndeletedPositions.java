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
public final class UndeletedPositions
        implements org.apache.spark.sql.api.java.UDF2, org.apache.spark.sql.api.java.UDF3, java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final long COUNT_MASK = 0xffffffffL;

    private final org.apache.spark.broadcast.Broadcast words; // long[]
    private transient long[] local;

    private UndeletedPositions(org.apache.spark.broadcast.Broadcast words) {
        this.words = words;
    }

    /**
     * The row filter over the named columns (file size in bytes and 0-based position, longs; the file's path,
     * or null when no size is shared) for these words.
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

    public Object call(Object size, Object position) {
        return call(size, position, null);
    }

    public Object call(Object size, Object position, Object pathHash) {
        long[] w = local;
        if (w == null) {
            w = (long[]) words.value();
            local = w;
        }
        long pos = ((Long) position).longValue();
        long slot = w[0] + Math.floorMod(((Long) size).longValue(), w[1]);
        if (slot < 0 || slot >= w.length) {
            return Boolean.TRUE;
        }
        long held = w[(int) slot];
        if (held == -2L && pathHash != null) {
            long hashed = w[2] + Math.floorMod(((Long) pathHash).longValue(), w[3]);
            if (hashed < 0 || hashed >= w.length) {
                return Boolean.TRUE;
            }
            held = w[(int) hashed];
        }
        long word = pos >>> 6;
        if (pos < 0 || word >= (held & COUNT_MASK)) {
            return Boolean.TRUE;
        }
        long index = (held >>> 32) + word;
        if (index >= w.length) {
            return Boolean.TRUE;
        }
        return ((w[(int) index] >>> (pos & 63)) & 1L) == 0L ? Boolean.TRUE : Boolean.FALSE;
    }
}
