package dev.sluice.server;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

@Command(name = "simulate", mixinStandardHelpOptions = true,
    description = "Replays a traffic pattern through every algorithm and charts admitted versus refused over time (PNG).")
final class SimulateCommand implements Callable<Integer> {
  @Override public Integer call() {
    return 0;
  }
}
