import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryUsage;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What HotSpot's own tests do not cover about -XX:+UseLibMetaspace, one check per argument:
 *   report PAYLOAD        jcmd VM.metaspace prints the library's report, with every loader,
 *                         and show-classes names each loader's classes
 *   mxbean PAYLOAD        the memory pools' used / committed are the library's (within 64 KiB of
 *                         the report taken just before, in bytes)
 *   oom PAYLOAD           loading until the cap: OutOfMemoryError, message printed
 * Each prints "PASS <check>" or throws.
 */
public class LibMetaspaceChecks {
  static final List<ClassLoader> KEEP = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    URL payload = new File(args[1]).toURI().toURL();
    switch (args[0]) {
      case "report" -> report(payload);
      case "mxbean" -> mxbean(payload);
      case "oom" -> oom(payload);
      default -> throw new IllegalArgumentException(args[0]);
    }
    System.out.println("PASS " + args[0]);
  }

  static void load(URL payload, int loaders) throws Exception {
    for (int i = 0; i < loaders; i++) {
      URLClassLoader l = new URLClassLoader(new URL[] {payload}, ClassLoader.getPlatformClassLoader());
      l.loadClass("payload.Workload").getMethod("run", int.class).invoke(null, i);
      KEEP.add(l);
    }
  }

  static String jcmd(String... command) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + "/bin/jcmd");
    cmd.add(Long.toString(ProcessHandle.current().pid()));
    cmd.addAll(List.of(command));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) throw new AssertionError("jcmd failed:\n" + out);
    return out;
  }

  static void check(boolean ok, String what, String context) {
    if (!ok) throw new AssertionError(what + "\n" + context);
  }

  static void report(URL payload) throws Exception {
    load(payload, 50);
    String out = jcmd("VM.metaspace", "show-loaders");
    check(out.contains("libmetaspace") && out.contains("(-XX:+UseLibMetaspace)"), "no library header", out);
    check(out.contains("Total usage"), "no totals", out);
    Matcher m = Pattern.compile("Total usage - (\\d+) loaders \\((\\d+) boot, (\\d+) standard, (\\d+) micro\\)").matcher(out);
    check(m.find(), "no loader count", out);
    check(Integer.parseInt(m.group(3)) >= 50, "fewer than the 50 standard loaders made here", out);
    check(Integer.parseInt(m.group(2)) == 1, "not exactly one boot loader", out);
    String classes = jcmd("VM.metaspace", "show-loaders", "show-classes");
    Matcher w = Pattern.compile("^\\s+\\d+: payload\\.Workload$", Pattern.MULTILINE).matcher(classes);
    int named = 0;
    while (w.find()) named++;
    check(named >= 50, "show-classes names payload.Workload under " + named + " loaders, not the 50 made here", classes);
  }

  // "  both:   reserved committed used ..." in bytes (scale=1 prints plain byte counts).
  static long[] bytesRow(String out, String space) {
    Matcher m = Pattern.compile("^\\s+" + space + ":\\s+([\\d,]+)\\s*B?\\s+([\\d,]+)\\s*B?\\s+([\\d,]+)", Pattern.MULTILINE).matcher(out);
    check(m.find(), "no " + space + " row in bytes", out);
    return new long[] {Long.parseLong(m.group(1).replace(",", "")), Long.parseLong(m.group(2).replace(",", "")),
                       Long.parseLong(m.group(3).replace(",", ""))};
  }

  static void mxbean(URL payload) throws Exception {
    load(payload, 100);
    MemoryPoolMXBean meta = null, klass = null;
    for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
      if (p.getName().equals("Metaspace")) meta = p;
      if (p.getName().equals("Compressed Class Space")) klass = p;
    }
    check(meta != null && klass != null, "pools missing", "");
    meta.getUsage();
    klass.getUsage();  // classes of the first call loaded before the report
    String out = jcmd("VM.metaspace", "scale=1");
    MemoryUsage m = meta.getUsage(), k = klass.getUsage();
    long[] both = bytesRow(out, "both"), cls = bytesRow(out, "class");
    long slack = 64 * 1024;
    String ctx = "Metaspace pool " + m + "\nclass pool " + k + "\n" + out;
    check(Math.abs(m.getCommitted() - both[1]) <= slack, "Metaspace pool committed is not the library's", ctx);
    check(Math.abs(m.getUsed() - both[2]) <= slack, "Metaspace pool used is not the library's", ctx);
    check(Math.abs(k.getCommitted() - cls[1]) <= slack, "class pool committed is not the library's", ctx);
    check(Math.abs(k.getUsed() - cls[2]) <= slack, "class pool used is not the library's", ctx);
    check(k.getMax() == cls[0], "class pool max is not the class space's size", ctx);
  }

  static void oom(URL payload) throws Exception {
    // The error comes as thrown, or inside what reflection and lambda linkage wrap it in
    // (InvocationTargetException, BootstrapMethodError).
    Throwable caught;
    try {
      for (int round = 0; ; round++) {
        load(payload, 100);
      }
    } catch (Throwable e) {
      caught = e;
    }
    // At the cap, anything that needs new metadata fails too: the first run of a string
    // concatenation spins a class. Free the loaders and unload them before looking further.
    KEEP.clear();
    System.gc();
    Throwable t = caught;
    while (t != null && !(t instanceof OutOfMemoryError)) {
      t = t.getCause();
    }
    if (t == null) {
      throw new AssertionError("no OutOfMemoryError, but", caught);
    }
    System.out.println("OutOfMemoryError: " + t.getMessage());
  }
}
