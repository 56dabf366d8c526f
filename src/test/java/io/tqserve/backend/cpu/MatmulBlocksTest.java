package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link CpuBackend#blocks}: the blocks of rows a fused matmul hands the kernel threads cover every row of every
 * matrix exactly once, in matrix order, in whole groups of four rows (a matrix's last block may end on its odd row
 * count); the tail split cuts only the group's last {@code threads} blocks, into pieces of a quarter of a block.
 */
class MatmulBlocksTest {

    @ParameterizedTest
    @CsvSource({"2, 1", "2, 4", "2, 8", "1, 4", "4, 4", "3, 2"})
    void blocksCoverEveryRowOnceInWholeGroupsAndCutOnlyTheTail(int threads, int split) {
        int[][] groups = {
            {2048, 1024, 1024},
            {5632, 5632},
            {2048},
            {8192},
            {37},
            {8},
            {12, 64},
        };
        for (int[] ws : groups) {
            int[] b = CpuBackend.blocks(ws, threads, split);
            int[] plain = CpuBackend.blocks(ws, threads, 1);
            assertEquals(0, b.length % 3);
            int at = 0;
            for (int k = 0; k < ws.length; k++) {
                int next = 0;
                for (; at < b.length && b[at] == k; at += 3) {
                    assertEquals(next, b[at + 1], "matrix " + k + " continues where its previous block ended");
                    assertTrue(b[at + 2] > b[at + 1], "non-empty block");
                    assertTrue(b[at + 2] == ws[k] || (b[at + 2] - b[at + 1]) % 4 == 0, "whole groups of 4");
                    next = b[at + 2];
                }
                assertEquals(ws[k], next, "matrix " + k + " covered to its last row");
            }
            assertEquals(b.length, at, "matrices in order, each once");
            int plainBlocks = plain.length / 3;
            int lastCount = 0;
            for (int i = 0; i < plain.length; i += 3) {
                lastCount += plain[i] == ws.length - 1 ? 1 : 0;
            }
            int cut = split > 1 && threads > 1 ? Math.min(threads, lastCount - 1) : 0;
            int prefix = plainBlocks - cut;
            for (int i = 0; i < 3 * prefix; i++) {
                assertEquals(plain[i], b[i], "blocks before the tail are the equal blocks");
            }
            int per = plain[3 * (plainBlocks - lastCount) + 2] - plain[3 * (plainBlocks - lastCount) + 1];
            for (int i = 3 * prefix; i < b.length; i += 3) {
                assertEquals(ws.length - 1, b[i], "only the last matrix's blocks are cut");
                int size = b[i + 2] - b[i + 1];
                assertTrue(size <= Math.max(4, (per / split + 3) / 4 * 4), "tail piece of " + size + " rows");
            }
            assertTrue(b.length / 3 <= plainBlocks + cut * (split - 1), "at most " + split + " pieces per cut block");
            if (cut > 0 && per >= 4 * split) {
                assertTrue(b.length / 3 >= plainBlocks + (cut - 1) * (split - 1), "the cut blocks are in pieces (a short last one may stay whole)");
            }
        }
    }
}
