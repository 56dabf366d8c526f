package io.tqserve.api;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * Captures every Logback event at WARN and above while open (attached to the root logger directly, so it sees
 * what the console would), for tests that assert that malformed input logs no ERROR and no stack trace.
 */
final class LogEvents implements AutoCloseable {
    private final ch.qos.logback.classic.Logger root;
    private final ListAppender<ILoggingEvent> events = new ListAppender<>();

    LogEvents() {
        LoggerContext lc = (LoggerContext) LoggerFactory.getILoggerFactory();
        root = lc.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        events.setContext(lc);
        events.start();
        root.addAppender(events);
    }

    /** ERROR events, and WARN events that carry a stack trace, as "logger: message [exception]" lines. */
    List<String> errorsOrStacks() {
        return List.copyOf(events.list).stream()
                .filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR)
                        || e.getLevel().isGreaterOrEqual(Level.WARN) && e.getThrowableProxy() != null)
                .map(e -> {
                    IThrowableProxy t = e.getThrowableProxy();
                    return e.getLoggerName() + ": " + e.getFormattedMessage()
                            + (t == null ? "" : " [" + t.getClassName() + ": " + t.getMessage() + "]");
                })
                .toList();
    }

    @Override
    public void close() {
        root.detachAppender(events);
    }
}
