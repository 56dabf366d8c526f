package io.tqserve.template;

/**
 * An error while rendering, with the message Python would give (its exception type kept apart), before the
 * template line is known; {@link Renderer} turns it into a {@link TemplateException} naming the line.
 */
final class RenderException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Python's exception type: TemplateError (raise_exception), UndefinedError, TypeError, ... */
    final String pythonType;

    RenderException(String pythonType, String message) {
        super(message, null, false, false);
        this.pythonType = pythonType;
    }

    static RenderException undefined(String message) {
        return new RenderException("UndefinedError", message);
    }

    static RenderException type(String message) {
        return new RenderException("TypeError", message);
    }

    static RenderException value(String message) {
        return new RenderException("ValueError", message);
    }

    static RenderException raised(String message) {
        return new RenderException("TemplateError", message);
    }

    static RenderException security(String message) {
        return new RenderException("SecurityError", message);
    }
}
