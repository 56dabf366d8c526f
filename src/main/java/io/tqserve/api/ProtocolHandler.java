package io.tqserve.api;

import io.tqserve.api.anthropic.MessagesOutput;
import io.tqserve.api.anthropic.MessagesRequest;
import io.tqserve.api.openai.ErrorBody;
import io.tqserve.api.openai.Wire;
import io.tqserve.api.responses.ResponseStore;
import io.tqserve.api.responses.ResponsesOutput;
import io.tqserve.api.responses.ResponsesRequest;
import io.tqserve.routing.ServingRuntime;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The protocols served by translation into chat requests (docs/api.md): Anthropic's Messages API
 * ({@code POST /v1/messages}, {@code POST /v1/messages/count_tokens}) and OpenAI's Responses API
 * ({@code POST /v1/responses}, {@code GET} and {@code DELETE /v1/responses/{id}}, with the responses kept per
 * tenant in a {@link ResponseStore}). Each translates its request into a chat
 * completion request and writes the chat path's events in its own wire format; everything between (parsing and
 * limits, the template, routing, lanes, the prompt cache, structured outputs, tenancy) is the chat path's.
 */
@Component
public final class ProtocolHandler {
    private final GenerationHandler generation;
    private final ResponseStore store;
    private final ServingRuntime runtime;

    public ProtocolHandler(GenerationHandler generation, ResponseStore store, ServingRuntime runtime) {
        this.generation = generation;
        this.store = store;
        this.runtime = runtime;
    }

    private final GenerationHandler.Translator messages = new GenerationHandler.Translator() {
        @Override
        public JsonNode chatBody(JsonNode body, String tenant) {
            ObjectNode chat = MessagesRequest.toChat(body);
            // thinking asks for reasoning that a model may not do: its budget caps reasoning where the served
            // model's template reasons in marked blocks, and is nothing to cap elsewhere (not a 400)
            boolean reasons = runtime.loaded().map(l -> ChatFormats.of(l.model()).reasoning().isPresent())
                    .orElse(false);
            if (!reasons) {
                chat.remove("thinking_token_budget");
            }
            return chat;
        }

        @Override
        public WireOutput output(JsonNode body, String tenant, String id, String model,
                PromptBuilder.Prepared prepared) {
            return new MessagesOutput(id, model, prepared.generation().promptTokens().length,
                    prepared.plan().parser());
        }

        @Override
        public ApiException rename(ApiException e) {
            return MessagesRequest.rename(e);
        }
    };

    private static final GenerationHandler.Translator COUNT_TOKENS = new GenerationHandler.Translator() {
        @Override
        public JsonNode chatBody(JsonNode body, String tenant) {
            return MessagesRequest.toChat(body, true);
        }

        @Override
        public WireOutput output(JsonNode body, String tenant, String id, String model,
                PromptBuilder.Prepared prepared) {
            throw new UnsupportedOperationException("count_tokens generates nothing");
        }

        @Override
        public ApiException rename(ApiException e) {
            return MessagesRequest.rename(e);
        }
    };

    /** {@code POST /v1/messages}. */
    public Mono<ServerResponse> messages(ServerRequest request) {
        return generation.translated(request, Endpoint.MESSAGES, messages);
    }

    /** {@code POST /v1/messages/count_tokens}: the prompt's tokens as the template renders the request. */
    public Mono<ServerResponse> countTokens(ServerRequest request) {
        return generation.promptTokens(request, COUNT_TOKENS)
                .flatMap(n -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(Wire.json(Wire.MAPPER.createObjectNode().put("input_tokens", n))));
    }

    /** {@code POST /v1/responses}. */
    public Mono<ServerResponse> responses(ServerRequest request) {
        AtomicReference<ResponsesRequest> translated = new AtomicReference<>();
        return generation.translated(request, Endpoint.RESPONSES, new GenerationHandler.Translator() {
            @Override
            public JsonNode chatBody(JsonNode body, String tenant) {
                ArrayNode previous = null;
                JsonNode prev = body == null ? null : body.get("previous_response_id");
                if (prev != null && !prev.isNull()) {
                    if (!prev.isString()) {
                        throw ApiException.invalid("previous_response_id", "previous_response_id must be a string");
                    }
                    previous = store.get(tenant, prev.asString()).orElseThrow(() -> new ApiException(
                            HttpStatus.NOT_FOUND, "invalid_request_error", "previous_response_id",
                            "previous_response_not_found", "Previous response with id '"
                                    + RequestParser.printable(prev.asString()) + "' not found.", null))
                            .conversation();
                }
                ResponsesRequest r = ResponsesRequest.of(body, previous);
                translated.set(r);
                return r.chat();
            }

            @Override
            public WireOutput output(JsonNode body, String tenant, String id, String model,
                    PromptBuilder.Prepared prepared) {
                boolean keep = body.path("store").asBoolean(true);
                return new ResponsesOutput(id, model, body, prepared.plan().parser(), (json, assistant) -> {
                    if (keep) {
                        ArrayNode conversation = translated.get().conversation().deepCopy();
                        conversation.add(assistant);
                        store.put(tenant, id, json, conversation);
                    }
                });
            }

            @Override
            public ApiException rename(ApiException e) {
                return ResponsesRequest.rename(e);
            }
        });
    }

    /** {@code GET /v1/responses/{id}}: a kept response of the caller's tenant. */
    public Mono<ServerResponse> getResponse(ServerRequest request) {
        String id = request.pathVariable("id");
        return Mono.fromCallable(() -> store.get(Tenant.of(request.exchange()), id).orElseThrow(() -> notFound(id)))
                .flatMap(s -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(s.response()));
    }

    /** {@code DELETE /v1/responses/{id}}. */
    public Mono<ServerResponse> deleteResponse(ServerRequest request) {
        String id = request.pathVariable("id");
        return Mono.fromCallable(() -> {
            if (!store.delete(Tenant.of(request.exchange()), id)) {
                throw notFound(id);
            }
            return Wire.json(Wire.MAPPER.createObjectNode().put("id", id).put("object", "response")
                    .put("deleted", true));
        }).flatMap(json -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(json));
    }

    private static ApiException notFound(String id) {
        return new ApiException(HttpStatus.NOT_FOUND, "invalid_request_error", null, null,
                "No response found with id '" + RequestParser.printable(id) + "'.", null);
    }
}
