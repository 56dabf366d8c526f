package io.tqserve.kv;

import java.util.function.IntConsumer;

/**
 * The attention of one cache's pass as independent tasks, staged by {@link KvCache#stage} (which already stored
 * the pass's K/V): {@code body} run for every index in [0, count) in any order, on any threads, computes exactly what
 * {@link KvCache#attend} computes. A batched forward gathers the tasks of all its chunks and runs them in one
 * hand-off to the kernel threads per layer instead of one per chunk.
 *
 * @param count the number of tasks (0: nothing left to run)
 * @param work  an estimate of one task's work (tokens attended × rows), to start the largest tasks first
 * @param body  runs task i; bodies do not hand work to the kernel threads themselves
 */
public record AttentionTasks(int count, long work, IntConsumer body) {
    /** Nothing to run (the cache attended in {@link KvCache#stage} itself). */
    public static final AttentionTasks NONE = new AttentionTasks(0, 0, i -> {
    });
}
