package io.tqserve.api;

import io.tqserve.api.openai.ModelList;
import io.tqserve.api.openai.Wire;
import io.tqserve.model.Model;
import io.tqserve.routing.ServingRuntime;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import tools.jackson.databind.JsonNode;

/**
 * {@code GET /v1/models}, {@code GET /v1/models/{id}}, and vLLM-style {@code POST /tokenize} (a prompt, or chat
 * messages rendered with the chat template) and {@code POST /detokenize}.
 */
@Component
public final class TokenizeHandler {
    private final ServingRuntime runtime;
    private final ApiSettings settings;
    private final Scheduler scheduler;
    private final long created = System.currentTimeMillis() / 1000;

    public TokenizeHandler(ServingRuntime runtime, ApiSettings settings, ApiScheduler scheduler) {
        this.runtime = runtime;
        this.settings = settings;
        this.scheduler = scheduler.scheduler();
    }

    public Mono<ServerResponse> models(ServerRequest request) {
        return json(ModelList.of(card()));
    }

    public Mono<ServerResponse> model(ServerRequest request) {
        String id = request.pathVariable("id");
        if (!id.equals(runtime.modelId()) && settings.strictModelId()) {
            return Mono.error(new ApiException(HttpStatus.NOT_FOUND, "invalid_request_error", "model",
                    "model_not_found", "The model `" + id + "` does not exist", null));
        }
        return json(card());
    }

    private ModelList.ModelCard card() {
        return new ModelList.ModelCard(runtime.modelId(), created, runtime.modelConfig().maxPositions());
    }

    public Mono<ServerResponse> tokenize(ServerRequest request) {
        return Mono.defer(() -> {
            Model model = Readiness.require(runtime, settings).model();
            return Json.body(request).map(Json::read)
                    .publishOn(scheduler)
                    .map(body -> {
                        if (!body.isObject()) {
                            throw ApiException.invalid(null, "the request body must be a JSON object");
                        }
                        int[] ids = tokenize(body, model, settings);
                        Map<String, Object> out = new LinkedHashMap<>();
                        out.put("count", ids.length);
                        out.put("max_model_len", model.config().maxPositions());
                        out.put("tokens", ids);
                        return out;
                    })
                    .flatMap(TokenizeHandler::json);
        });
    }

    /**
     * The tokens a tokenize (or snapshot) request names: its prompt, or its conversation (messages, tools, tool
     * calls, chat_template_kwargs) rendered and tokenized exactly as a chat completion renders it.
     */
    static int[] tokenize(JsonNode body, Model model, ApiSettings settings) {
        JsonNode prompt = body.get("prompt");
        JsonNode messages = body.get("messages");
        if (prompt != null && !prompt.isNull()) {
            if (!prompt.isString()) {
                throw ApiException.invalid("prompt", "prompt must be a string");
            }
            return model.tokenizer().encode(InputLimits.text(prompt.asString(), "prompt", settings.maxPromptChars()));
        }
        if (messages == null || messages.isNull()) {
            throw ApiException.invalid("prompt", "give a prompt (text) or messages (chat)");
        }
        ParsedRequest chat = new RequestParser(model.config().vocabSize(), settings.maxMessages(),
                settings.maxPromptChars()).parse(body, Endpoint.CHAT, null);
        JsonNode agp = body.get("add_generation_prompt");
        boolean addGenerationPrompt = agp == null || !agp.isBoolean() || agp.booleanValue();
        return ChatFormats.render(ChatFormats.of(model), chat.chat(), addGenerationPrompt, settings).tokens();
    }

    public Mono<ServerResponse> detokenize(ServerRequest request) {
        return Mono.defer(() -> {
            Model model = Readiness.require(runtime, settings).model();
            return Json.body(request).map(Json::read)
                    .publishOn(scheduler)
                    .map(body -> {
                        JsonNode tokens = body.get("tokens");
                        if (tokens == null || !tokens.isArray()) {
                            throw ApiException.invalid("tokens", "tokens must be an array of token ids");
                        }
                        int vocab = model.config().vocabSize();
                        int[] ids = new int[tokens.size()];
                        for (int i = 0; i < ids.length; i++) {
                            JsonNode t = tokens.get(i);
                            if (!t.isIntegralNumber() || !t.canConvertToInt() || t.intValue() < 0
                                    || t.intValue() >= vocab) {
                                throw ApiException.invalid("tokens", "tokens[" + i + "] must be a token id in [0, "
                                        + vocab + ")");
                            }
                            ids[i] = t.intValue();
                        }
                        return Map.of("prompt", model.tokenizer().decode(ids));
                    })
                    .flatMap(TokenizeHandler::json);
        });
    }

    private static Mono<ServerResponse> json(Object body) {
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Wire.json(body).getBytes(StandardCharsets.UTF_8));
    }
}
