package io.tqserve.engine;

import java.util.concurrent.atomic.AtomicLong;

/** A lane's KV byte budget: admitted sequences reserve their worst case up front and release it at the end. */
public final class KvBudget {
    private final long budget;
    private final AtomicLong reserved = new AtomicLong();

    public KvBudget(long budgetBytes) {
        if (budgetBytes <= 0) {
            throw new IllegalArgumentException("KV budget must be positive");
        }
        this.budget = budgetBytes;
    }

    public long budget() {
        return budget;
    }

    public long reserved() {
        return reserved.get();
    }

    public boolean fits(long bytes) {
        return reserved.get() + bytes <= budget;
    }

    /** Reserves {@code bytes} if they fit; false otherwise. */
    public boolean tryReserve(long bytes) {
        while (true) {
            long cur = reserved.get();
            if (cur + bytes > budget) {
                return false;
            }
            if (reserved.compareAndSet(cur, cur + bytes)) {
                return true;
            }
        }
    }

    public void release(long bytes) {
        reserved.addAndGet(-bytes);
    }
}
