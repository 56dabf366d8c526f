package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The MLX backend's sources keep to 120 columns (the house rule of the package; a line over it is named). */
class MlxSourceLinesTest {
    static final int COLUMNS = 120;

    @Test
    void noLineOfTheMlxBackendIsOver120Columns() throws IOException {
        List<String> over = new ArrayList<>();
        try (Stream<Path> files = Files.walk(Path.of("src/main/java/io/tqserve/backend/mlx"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                List<String> lines = Files.readAllLines(f);
                for (int i = 0; i < lines.size(); i++) {
                    if (lines.get(i).length() > COLUMNS) {
                        over.add(f.getFileName() + ":" + (i + 1) + " (" + lines.get(i).length() + " columns)");
                    }
                }
            }
        }
        assertEquals(List.of(), over, "lines over " + COLUMNS + " columns");
    }
}
