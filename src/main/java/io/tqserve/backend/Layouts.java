package io.tqserve.backend;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Unaligned little-endian value layouts used to read safetensors data (which is 8-byte aligned at best). */
public final class Layouts {
    public static final ValueLayout.OfShort SHORT_LE =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfFloat FLOAT_LE =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    public static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Layouts() {
    }
}
