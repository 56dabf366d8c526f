package io.tqserve.cli;

/** Entry point of {@code ./tqserve}: dispatches the verb. */
public final class TqserveMain {
    private TqserveMain() {
    }

    public static void main(String[] args) {
        System.out.println("usage: tqserve [serve|generate|eval|bench] [options]");
    }
}
