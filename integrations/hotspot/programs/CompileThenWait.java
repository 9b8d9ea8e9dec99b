import javax.tools.ToolProvider;

/**
 * Runs javac in this VM with the given arguments, prints "READY <exit code>", and waits a minute,
 * so that a snapshot of the VM's memory (metaspace_rss.py) sees what compiling left behind.
 *
 *   java CompileThenWait JAVAC_ARGS...
 */
public class CompileThenWait {
  public static void main(String[] args) throws Exception {
    int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, args);
    System.out.println("READY " + rc);
    System.out.flush();
    Thread.sleep(60_000);
  }
}
