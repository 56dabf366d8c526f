package io.tqserve.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tqserve.backend.DType;
import org.junit.jupiter.api.Test;

/**
 * {@code -Dtqserve.cpu.quant-activations}: its values, its default, a bad value's message, and which matrices each
 * setting gives integer kernels.
 */
class QuantActivationsTest {
    @Test
    void propertyValuesDefaultAndABadValue() {
        String before = System.getProperty(QuantActivations.PROPERTY);
        try {
            System.clearProperty(QuantActivations.PROPERTY);
            assertThat(QuantActivations.configured()).isEqualTo(QuantActivations.AUTO);
            System.setProperty(QuantActivations.PROPERTY, " Float ");
            assertThat(QuantActivations.configured()).isEqualTo(QuantActivations.FLOAT);
            System.setProperty(QuantActivations.PROPERTY, "int8");
            assertThat(QuantActivations.configured()).isEqualTo(QuantActivations.INT8);
            System.setProperty(QuantActivations.PROPERTY, "int16");
            assertThatThrownBy(QuantActivations::configured)
                    .hasMessage("-Dtqserve.cpu.quant-activations=int16 is not one of auto, float, int8");
        } finally {
            if (before == null) {
                System.clearProperty(QuantActivations.PROPERTY);
            } else {
                System.setProperty(QuantActivations.PROPERTY, before);
            }
        }
    }

    @Test
    void autoTakesIntegerKernelsFor4BitGroupsOf64And128Only() {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            for (int bits : new int[] {4, 8}) {
                for (int groupSize : new int[] {32, 64, 128}) {
                    var w = QuantizedKernelParityTest.quantized(arena, 4, 256, bits, groupSize, DType.BF16, 3);
                    boolean whole = QuantizedInt8.supported(bits, groupSize);
                    assertThat(QuantActivations.FLOAT.integer(w)).isFalse();
                    assertThat(QuantActivations.INT8.integer(w)).isEqualTo(whole);
                    assertThat(QuantActivations.AUTO.integer(w)).isEqualTo(whole && bits == 4);
                    assertThat(QuantActivations.AUTO.range(w)).isEqualTo(bits == 4 ? QuantizedWide4.RANGE : 127);
                    assertThat(QuantActivations.INT8.range(w)).isEqualTo(127);
                }
            }
        }
    }
}
