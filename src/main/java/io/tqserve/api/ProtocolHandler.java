package io.tqserve.api;

import io.tqserve.api.anthropic.MessagesOutput;
import io.tqserve.api.anthropic.MessagesRequest;
import io.tqserve.api.openai.Wire;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;

/**
 * The protocols served by translation into chat requests (docs/api.md): Anthropic's Messages API
 * ({@code POST /v1/messages}, {@code POST /v1/messages/count_tokens}). Each translates its request into a chat
 * completion request and writes the chat path's events in its own wire format; everything between (parsing and
 * limits, the template, routing, lanes, the prompt cache, structured outputs, tenancy) is the chat path's.
 */
@Component
public final class ProtocolHandler {
    private final GenerationHandler generation;

    public ProtocolHandler(GenerationHandler generation) {
        this.generation = generation;
    }

    private static final GenerationHandler.Translator MESSAGES = new GenerationHandler.Translator() {
        @Override
        public JsonNode chatBody(JsonNode body, String tenant) {
            return MessagesRequest.toChat(body);
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
        return generation.translated(request, Endpoint.MESSAGES, MESSAGES);
    }

    /** {@code POST /v1/messages/count_tokens}: the prompt's tokens as the template renders the request. */
    public Mono<ServerResponse> countTokens(ServerRequest request) {
        return generation.promptTokens(request, COUNT_TOKENS)
                .flatMap(n -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(Wire.json(Wire.MAPPER.createObjectNode().put("input_tokens", n))));
    }
}
