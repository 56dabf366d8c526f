package io.tqserve.api;

import io.tqserve.constraint.CompileObserver;
import io.tqserve.constraint.CompileObserver.Lookup;
import io.tqserve.constraint.TokenConstraint;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import reactor.core.publisher.Mono;

/**
 * The compiled constraints of one served model, per tenant: a cache bounded in bytes (least recently used out
 * first) that holds only constraints of requests that were admitted to a lane, and the compiles in flight, shared
 * by the requests that ask for the same constraint at once (single flight). Keys carry the tenant (the API-key
 * hash of {@link Tenant}), so one key's requests never find, or time, another key's schemas.
 *
 * <p>A compile runs on the {@link ConstraintPool}; a request waits for it without holding a thread. When the last
 * request waiting for a compile goes away (client gone, deadline passed) the compile is cancelled.
 *
 * <p>A cached constraint grows while it is used (its token masks are computed on first use of each state), so
 * its size is measured again whenever a request takes it or ends with it, and the cache evicts down to its bound
 * then.
 */
final class ConstraintCache {
    /** A constraint of one tenant: {@code constraint} is the schema's (or tool set's) canonical key. */
    record Key(String tenant, String constraint) {
    }

    private static final class Entry {
        final TokenConstraint constraint;
        long bytes;

        Entry(TokenConstraint constraint, long bytes) {
            this.constraint = constraint;
            this.bytes = bytes;
        }
    }

    /** A compile in flight and the requests waiting for it. */
    private static final class Flight {
        /** Completed once the flight is gone from the map, so a request that sees the result cannot join it. */
        final CompletableFuture<TokenConstraint> result = new CompletableFuture<>();
        ConstraintPool.Job job;
        int waiters;
    }

    private final ConstraintPool pool;
    private final CompileObserver observer;
    private final long maxBytes;
    private final LinkedHashMap<Key, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<Key, Flight> flights = new HashMap<>();
    private long bytes;

    ConstraintCache(ConstraintPool pool) {
        this.pool = pool;
        this.observer = pool.observer();
        this.maxBytes = pool.settings().cacheBytes();
    }

    /** The memory a constraint holds now (it grows with its mask cache, which its limits bound). */
    static long sizeOf(TokenConstraint c) {
        return c.bytes();
    }

    /**
     * The constraint for a key: from the cache, else from the compile in flight for the same key, else from a
     * new compile. Cancelling the returned Mono (the request went away) cancels the compile when no other request
     * waits for it. A full compile queue fails with the API's queue-full answer.
     *
     * @param param the request parameter the constraint comes from (named by refusals)
     */
    Mono<TokenConstraint> get(Key key, Callable<TokenConstraint> compile, String param) {
        return Mono.defer(() -> {
            Flight flight;
            synchronized (this) {
                Entry e = entries.get(key);
                if (e != null) {
                    observer.lookup(Lookup.HIT);
                    remeasure(e);
                    return Mono.just(e.constraint);
                }
                flight = flights.get(key);
                if (flight == null) {
                    ConstraintPool.Job job = pool.submit(compile, param); // throws when the queue is full
                    Flight f = new Flight();
                    f.job = job;
                    flights.put(key, f);
                    job.result().whenComplete((c, error) -> {
                        ended(key, f);
                        if (error != null) {
                            f.result.completeExceptionally(error);
                        } else {
                            f.result.complete(c);
                        }
                    });
                    flight = f;
                    observer.lookup(Lookup.MISS);
                } else {
                    observer.lookup(Lookup.SHARED);
                }
                flight.waiters++;
            }
            Flight f = flight;
            return Mono.fromFuture(f.result, true).doOnCancel(() -> leave(key, f));
        });
    }

    private synchronized void ended(Key key, Flight f) {
        flights.remove(key, f);
    }

    private void leave(Key key, Flight f) {
        boolean last;
        synchronized (this) {
            last = --f.waiters == 0 && !f.result.isDone();
            if (last) {
                flights.remove(key, f);
            }
        }
        if (last) {
            f.job.cancel();
        }
    }

    /** Keeps a constraint of an admitted request (or measures it again if it is cached already). */
    synchronized void admit(Key key, TokenConstraint c) {
        Entry e = entries.get(key);
        if (e == null) {
            e = new Entry(c, 0);
            entries.put(key, e);
        }
        remeasure(e);
    }

    /** A request that used the constraint of this key ended: its masks may have grown. */
    synchronized void used(Key key) {
        Entry e = entries.get(key);
        if (e != null) {
            remeasure(e);
        }
    }

    private void remeasure(Entry e) {
        long now = sizeOf(e.constraint);
        bytes += now - e.bytes;
        e.bytes = now;
        Iterator<Entry> eldest = entries.values().iterator();
        while (bytes > maxBytes && eldest.hasNext()) {
            bytes -= eldest.next().bytes;
            eldest.remove();
        }
        observer.cache(bytes, entries.size());
    }

    synchronized long bytes() {
        return bytes;
    }

    synchronized int size() {
        return entries.size();
    }

    synchronized boolean contains(Key key) {
        return entries.containsKey(key);
    }

    /** Compiles in flight (for tests). */
    synchronized int inFlight() {
        return flights.size();
    }
}
