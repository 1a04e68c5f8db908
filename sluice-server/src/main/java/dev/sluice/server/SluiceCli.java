package dev.sluice.server;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code sluice} command line: {@code sluice serve} runs the rate-limit service, {@code sluice
 * simulate} replays traffic through every algorithm and charts it.
 */
@Command(name = "sluice", mixinStandardHelpOptions = true, version = "sluice 0.1.0-SNAPSHOT",
    description = "Rate limiting for the JVM, as a service.",
    subcommands = {ServeCommand.class, SimulateCommand.class, CommandLine.HelpCommand.class})
public final class SluiceCli implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    // serve returns once it has stopped (SIGTERM, SIGINT): its code is the process' exit status too.
    System.exit(run(args));
  }

  /** Runs the CLI and returns its exit code (0 ok, 1 runtime failure, 2 usage or config error). */
  static int run(String... args) {
    return run(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args);
  }

  /** {@link #run(String...)} writing to {@code out} and {@code err} (serve's banner goes to System.out). */
  static int run(PrintWriter out, PrintWriter err, String... args) {
    return new CommandLine(new SluiceCli())
        .setOut(out)
        .setErr(err)
        .setExecutionExceptionHandler((ex, cmd, parsed) -> {
          cmd.getErr().println("sluice: " + (ex instanceof IllegalArgumentException ? "" : ex.getClass().getSimpleName() + ": ")
              + ex.getMessage());
          return ex instanceof IllegalArgumentException ? 2 : 1;
        })
        .execute(args);
  }

  @Override public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }
}
