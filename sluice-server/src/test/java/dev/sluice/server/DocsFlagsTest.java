package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

import org.junit.jupiter.api.Test;

/**
 * Issue 17.11: the {@code simulate} flag table of docs/server.md listed four serve-only flags and
 * missed {@code --width}. Each command's table lists exactly the flags the command takes.
 */
class DocsFlagsTest {
  private static final Pattern ROW_FLAGS = Pattern.compile("^\\| `([^`]*)`");
  private static final Pattern LONG_FLAG = Pattern.compile("--(?:\\[no-])?([a-z][a-z-]*)");

  @Test void eachCommandsFlagTableListsExactlyItsFlags() throws Exception {
    String doc = Files.readString(Path.of("../docs/server.md"));
    assertThat(documented(section(doc, "## `sluice serve` flags"))).isEqualTo(declared(new ServeCommand()));
    assertThat(documented(section(doc, "## `sluice simulate`"))).isEqualTo(declared(new SimulateCommand()));
  }

  private static String section(String doc, String heading) {
    int start = doc.indexOf(heading);
    assertThat(start).as(heading).isNotNegative();
    int end = doc.indexOf("\n## ", start + heading.length());
    return doc.substring(start, end < 0 ? doc.length() : end);
  }

  private static Set<String> documented(String section) {
    Set<String> flags = new TreeSet<>();
    for (String line : section.split("\n")) {
      Matcher row = ROW_FLAGS.matcher(line);
      if (row.find()) {
        Matcher f = LONG_FLAG.matcher(row.group(1));
        while (f.find()) {
          flags.add("--" + f.group(1));
        }
      }
    }
    return flags;
  }

  private static Set<String> declared(Object command) {
    Set<String> flags = new TreeSet<>();
    for (CommandLine.Model.OptionSpec o : new CommandLine(command).getCommandSpec().options()) {
      Arrays.stream(o.names()).filter(n -> n.startsWith("--") && !n.equals("--help") && !n.equals("--version"))
          .forEach(flags::add);
    }
    return flags;
  }
}
