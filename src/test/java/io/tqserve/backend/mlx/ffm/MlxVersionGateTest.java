package io.tqserve.backend.mlx.ffm;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The library version gate (no libmlxc needed). */
class MlxVersionGateTest {
    static final Path LIB = Path.of("/x/libmlxc.so");

    @Test
    void refusesMlxOlderThan030WhoseSdpaSignatureDiffers() {
        MlxException e = assertThrows(MlxException.class, () -> Mlx.requireSupported("0.29.1", LIB));
        assertTrue(e.getMessage().contains("MLX-C 0.4 or newer"), e.getMessage());
    }

    @Test
    void acceptsMlx030AndNewerIncludingDevSuffixes() {
        assertDoesNotThrow(() -> Mlx.requireSupported("0.30.0", LIB));
        assertDoesNotThrow(() -> Mlx.requireSupported("0.31.2", LIB));
        assertDoesNotThrow(() -> Mlx.requireSupported("0.32.1.dev20260101+846d176", LIB));
        assertDoesNotThrow(() -> Mlx.requireSupported("1.0.0", LIB));
    }
}
