package io.tqserve.api;

import io.tqserve.backend.BackgroundPriority;
import io.tqserve.constraint.CompileObserver;
import io.tqserve.constraint.CompileObserver.Outcome;
import io.tqserve.constraint.ConstraintBudgetException;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.UnsupportedSchemaException;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;
import reactor.core.Disposable;
import reactor.core.scheduler.Schedulers;

/**
 * The threads that compile constraints ("tqserve-constraint-*"): a fixed number
 * ({@code tqserve.structured-output.compile-threads}) behind a bounded queue
 * ({@code tqserve.structured-output.compile-queue}), so a burst of expensive schemas waits or is refused instead of
 * taking the request workers, the event loop or the lanes' cores. Each compile runs under the budgets of
 * {@code tqserve.structured-output.*} (the compiler refuses a schema beyond one, naming the keyword, and watches its
 * own clock against {@code compile-timeout}, and the bytes its thread allocated against {@code compile-memory},
 * {@link CompileAllocation}); a compile still running at twice its time budget, or cancelled because
 * no request waits for it any more, is interrupted, and the compiler checks its thread's interrupt flag. The threads
 * run at the lowest OS scheduling priority ({@code tqserve.structured-output.low-priority}, on by default): a
 * compile then takes only the CPU the lanes' kernel threads leave, and its budget, counted in the compiling
 * thread's CPU time, does not shrink when it waits for a core.
 */
@Component
final class ConstraintPool implements DisposableBean {
    private final StructuredOutputSettings settings;
    private final ApiSettings api;
    private final CompileObserver observer;
    private final ThreadPoolExecutor executor;
    private volatile CompileHook hook = CompileHook.NONE;

    /** Runs on the compile thread before each compile (tests: hold a compile to observe its cancellation). */
    interface CompileHook {
        CompileHook NONE = () -> {
        };

        void beforeCompile() throws InterruptedException;
    }

    @Autowired
    ConstraintPool(StructuredOutputSettings settings, ApiSettings api, ObjectProvider<CompileObserver> observer) {
        this(settings, api, observer.getIfAvailable(() -> CompileObserver.NONE));
    }

    ConstraintPool(StructuredOutputSettings settings, ApiSettings api, CompileObserver observer) {
        this.settings = settings;
        this.api = api;
        this.observer = observer;
        AtomicInteger n = new AtomicInteger();
        this.executor = new ThreadPoolExecutor(settings.compileThreads(), settings.compileThreads(), 60,
                TimeUnit.SECONDS, new ArrayBlockingQueue<>(settings.compileQueue()), r -> {
                    Runnable body = settings.lowPriority() ? () -> {
                        BackgroundPriority.lowerCurrentThread(); // logs once where it cannot
                        r.run();
                    } : r;
                    Thread t = new Thread(body, "tqserve-constraint-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        executor.allowCoreThreadTimeOut(true);
    }

    private static ConstraintPool standalone;

    /** A pool of default settings, made on first use, for what runs without the server's (tests, tools). */
    static synchronized ConstraintPool standalone() {
        if (standalone == null) {
            standalone = new ConstraintPool(StructuredOutputSettings.DEFAULTS, new ApiSettings(java.util.List.of(),
                    false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1)), CompileObserver.NONE);
        }
        return standalone;
    }

    void setCompileHook(CompileHook hook) {
        this.hook = hook;
    }

    StructuredOutputSettings settings() {
        return settings;
    }

    CompileObserver observer() {
        return observer;
    }

    /**
     * Starts a compile (queued when every compile thread is busy). A full queue is refused with the API's
     * queue-full answer (429 or 503, {@code tqserve.api.queue-full-status}).
     *
     * @param param the request parameter the constraint comes from, named by a refusal at the time budget
     */
    Job submit(Callable<TokenConstraint> compile, String param) {
        Job job = new Job(compile, param);
        try {
            executor.execute(job.task);
        } catch (RejectedExecutionException e) {
            observer.ended(Outcome.REJECTED, -1);
            throw api.queueFull("the structured-output compile queue is full (" + settings.compileQueue()
                    + " compiles waiting, tqserve.structured-output.compile-queue)");
        }
        return job;
    }

    @Override
    public void destroy() {
        executor.shutdownNow();
    }

    /** One compile: its result, and how to stop it. */
    final class Job {
        private static final int QUEUED = 0;
        private static final int RUNNING = 1;
        private static final int ENDED = 2;

        private final CompletableFuture<TokenConstraint> result = new CompletableFuture<>();
        private final AtomicInteger state = new AtomicInteger(QUEUED);
        /** How the job ended, claimed once: by the compile's own end, or by the first stop (cancel, time budget). */
        private final AtomicReference<Outcome> endedAs = new AtomicReference<>();
        private final Callable<TokenConstraint> compile;
        private final String param;
        private final FutureTask<Void> task;

        private Job(Callable<TokenConstraint> compile, String param) {
            this.compile = compile;
            this.param = param;
            this.task = new FutureTask<>(this::run, null);
        }

        /** Completes with the constraint, or with the ApiException (or other error) that refuses the request. */
        CompletableFuture<TokenConstraint> result() {
            return result;
        }

        /** Ends the compile: out of the queue if it has not started, else its thread is interrupted. */
        void cancel() {
            stop(Outcome.CANCELLED, new CancellationException("no request waits for the compile any more"));
        }

        private void stop(Outcome why, Throwable error) {
            if (!endedAs.compareAndSet(null, why)) {
                return; // already stopped, or already ended
            }
            result.completeExceptionally(error);
            if (state.compareAndSet(QUEUED, ENDED)) {
                executor.remove(task);
                observer.ended(why, -1);
            } else {
                task.cancel(true);
            }
        }

        private void run() {
            if (!state.compareAndSet(QUEUED, RUNNING)) {
                return;
            }
            observer.started();
            long start = System.nanoTime();
            Duration budget = settings.compileTimeout();
            Disposable timer = Schedulers.parallel().schedule(() -> stop(Outcome.TIMEOUT, ApiException.invalid(param,
                    "schema_too_complex", "compiling the constraint of " + param + " did not finish within "
                            + budget.toMillis() + " ms (tqserve.structured-output.compile-timeout)")),
                    settings.interruptAfter().toNanos(), TimeUnit.NANOSECONDS);
            Outcome outcome;
            TokenConstraint constraint = null;
            Throwable error = null;
            try {
                hook.beforeCompile();
                CompileAllocation.begin(); // the compile's memory budget counts from here (the compiler checks it)
                constraint = compile.call();
                outcome = Outcome.COMPILED;
            } catch (ConstraintBudgetException e) {
                outcome = Outcome.REFUSED;
                error = ApiException.invalid(param, "schema_too_complex", e.getMessage());
            } catch (UnsupportedSchemaException e) {
                outcome = Outcome.REFUSED;
                error = ApiException.invalid(param, "unsupported_schema", e.getMessage());
            } catch (Throwable e) { // includes an interrupted compile, whose result the stop has already set
                outcome = Outcome.FAILED;
                error = e;
            } finally {
                CompileAllocation.end();
                timer.dispose();
                state.set(ENDED);
            }
            boolean ours = endedAs.compareAndSet(null, outcome);
            // Recorded before the result is published: a request answered from it (and a test reading the metrics
            // after the answer) sees the compile counted and no longer running, even when this low-priority thread
            // is not scheduled again for a while after completing the future.
            observer.ended(ours ? outcome : endedAs.get(), System.nanoTime() - start);
            if (ours) {
                if (error == null) {
                    result.complete(constraint);
                } else {
                    result.completeExceptionally(error);
                }
            }
        }
    }
}
