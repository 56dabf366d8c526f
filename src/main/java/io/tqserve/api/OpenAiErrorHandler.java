package io.tqserve.api;

import io.tqserve.api.anthropic.AnthropicErrors;
import io.tqserve.api.openai.ErrorBody;
import io.tqserve.api.openai.Wire;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.annotation.Order;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebInputException;
import org.springframework.web.server.WebExceptionHandler;
import io.netty.channel.ChannelException;
import io.netty.handler.timeout.ReadTimeoutException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.channel.AbortedException;
import reactor.netty.http.server.HttpServerResponse;

/**
 * Every error the server answers carries an OpenAI error body ({@code {"error": {"message", "type", "param",
 * "code"}}}) and the right status: {@link ApiException}s as they say; unknown paths 404; wrong methods 405; a
 * body over the size limit 413; anything unexpected 500 (logged, never with internals in the message).
 * The {@code /v1/messages} paths answer in Anthropic's shape instead ({@link AnthropicErrors}). Runs before Spring
 * Boot's own error handler.
 */
@Component
@Order(-2)
public final class OpenAiErrorHandler implements WebExceptionHandler {
    /** Most bytes of an unread request body read and dropped before an error answer (then the connection closes). */
    static final long MAX_DRAIN_BYTES = 256 * 1024;
    /** The status recorded for a request whose client went away before it was answered (nginx's convention). */
    static final int CLIENT_CLOSED_REQUEST = 499;
    private static final Logger log = LoggerFactory.getLogger(OpenAiErrorHandler.class);

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable ex) {
        ServerHttpResponse response = exchange.getResponse();
        if (response.isCommitted()) {
            return Mono.error(ex);
        }
        if (answeredByNetty(response)) {
            // Reactor Netty already answered on the wire (a 400 for a body it could not decode, e.g. a chunk size
            // "zz") and will close the connection: record that status, write nothing more.
            response.setStatusCode(HttpStatus.BAD_REQUEST);
            log.debug("request {} {} was answered by the HTTP decoder: {}", exchange.getRequest().getMethod(),
                    exchange.getRequest().getPath(), ex.toString());
            return Mono.empty();
        }
        if (clientClosed(ex)) {
            // The client closed the connection (or half-closed it before the answer): nothing can be written and
            // nothing failed on the server. Recorded as 499 (client closed request), not as a 5xx.
            response.setStatusCode(HttpStatusCode.valueOf(CLIENT_CLOSED_REQUEST));
            log.debug("request {} {}: the client closed the connection ({})", exchange.getRequest().getMethod(),
                    exchange.getRequest().getPath(), ex.toString());
            return Mono.empty();
        }
        ApiException api = toApiException(exchange, ex);
        boolean anthropic = AnthropicErrors.serves(exchange.getRequest().getPath().pathWithinApplication().value());
        response.setStatusCode(anthropic ? HttpStatusCode.valueOf(AnthropicErrors.status(api)) : api.status());
        HttpHeaders h = response.getHeaders();
        h.setContentType(MediaType.APPLICATION_JSON);
        if (api.retryAfter() != null) {
            h.set(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, api.retryAfter().toSeconds())));
        }
        byte[] body = (anthropic ? AnthropicErrors.body(api)
                : Wire.json(ErrorBody.of(api.getMessage(), api.type(), api.param(), api.code())))
                .getBytes(StandardCharsets.UTF_8);
        return drainRequestBody(exchange).then(
                Mono.defer(() -> response.writeWith(Mono.just(response.bufferFactory().wrap(body)))));
    }

    /**
     * Reads and drops what is left of the request body before the error is answered (at most
     * {@link #MAX_DRAIN_BYTES}; past that the connection is closed after the answer). Reactor Netty 1.3.6 can stop
     * answering a keep-alive connection when an answer is complete before the request was read to its end: the
     * next request on that connection (an OpenAI SDK reuses its connections) then never gets a response. Seen
     * after a 401 or a 404 followed by any request, in about 1 of 20 cases over loopback; reactor/reactor-netty
     * issues 4188 and 4361 describe the same race. {@link AsyncDispatchFilter} alone avoids it (no hang in 6,000
     * mixed requests on one connection, 401s and 404s with unread bodies included); this drain stays as a second
     * guard and bounds what an unread body costs. A body already read (or failed, e.g. over the size limit)
     * cannot be subscribed again, which is fine: nothing is left to read.
     */
    private static Mono<Void> drainRequestBody(ServerWebExchange exchange) {
        AtomicLong read = new AtomicLong();
        return exchange.getRequest().getBody()
                .map(b -> {
                    read.addAndGet(b.readableByteCount());
                    DataBufferUtils.release(b);
                    return read.get();
                })
                .takeUntil(n -> n > MAX_DRAIN_BYTES)
                .onErrorResume(e -> Flux.empty())
                .then(Mono.fromRunnable(() -> {
                    if (read.get() > MAX_DRAIN_BYTES) {
                        exchange.getResponse().getHeaders().set(HttpHeaders.CONNECTION, "close");
                    }
                }));
    }

    /** True when the server's HTTP layer has sent a response head of its own for this exchange. */
    static boolean answeredByNetty(ServerHttpResponse response) {
        try {
            return ServerHttpResponseDecorator.getNativeResponse(response) instanceof HttpServerResponse n
                    && n.hasSentHeaders();
        } catch (IllegalStateException e) {
            return false; // a mock response (tests bound to a router function) has no native response
        }
    }

    static ApiException toApiException(ServerWebExchange exchange, Throwable ex) {
        if (ex instanceof ApiException a) {
            return a;
        }
        if (hasCause(ex, InvalidMediaTypeException.class)) {
            return Json.unsupported("the Content-Type cannot be parsed");
        }
        if (bodyTimedOut(ex)) {
            return new ApiException(HttpStatus.REQUEST_TIMEOUT, "timeout", null, "request_timeout",
                    "the request body did not arrive in time (tqserve.api.http.body-timeout)", null);
        }
        if (hasCause(ex, DataBufferLimitException.class)) {
            return new ApiException(HttpStatus.PAYLOAD_TOO_LARGE, "invalid_request_error", null, "body_too_large",
                    "the request body is larger than the server accepts (spring.http.codecs.max-in-memory-size)", null);
        }
        if (ex instanceof ServerWebInputException in) {
            return ApiException.invalid(null, "could not read the request: " + in.getReason());
        }
        if (ex instanceof ResponseStatusException rse) {
            HttpStatusCode sc = rse.getStatusCode();
            HttpStatus status = HttpStatus.resolve(sc.value());
            if (status == null) {
                status = HttpStatus.INTERNAL_SERVER_ERROR;
            }
            String path = exchange.getRequest().getMethod() + " " + exchange.getRequest().getPath().value();
            String message = switch (status) {
                case NOT_FOUND -> "Invalid URL (" + path + ")";
                case METHOD_NOT_ALLOWED -> "method not allowed (" + path + ")";
                case UNSUPPORTED_MEDIA_TYPE -> "unsupported content type; send application/json";
                default -> rse.getReason() != null ? rse.getReason() : status.getReasonPhrase();
            };
            String type = status.is5xxServerError() ? "server_error" : "invalid_request_error";
            return new ApiException(status, type, null, null, message, null);
        }
        log.error("unexpected error answering {} {}", exchange.getRequest().getMethod(),
                exchange.getRequest().getPath(), ex);
        return new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, "server_error", null, null,
                "the server had an error while processing the request", null);
    }

    /**
     * Reactor Netty's body timeout ({@code HttpServer.requestTimeout}) fails the body with its package-private
     * {@code RequestTimeoutException}, a {@link ChannelException} with the message "Request timed out".
     */
    private static boolean bodyTimedOut(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof ReadTimeoutException
                    || c instanceof ChannelException && "Request timed out".equals(c.getMessage())) {
                return true;
            }
        }
        return false;
    }

    private static boolean hasCause(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /** True when {@code ex} (or a cause) says the connection was closed by the client: Reactor Netty's abort. */
    static boolean clientClosed(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof AbortedException) {
                return true;
            }
        }
        return false;
    }
}
