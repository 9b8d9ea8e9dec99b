// A short jshell session (tools/lab/traces/record-traces.sh): a few expressions, a method, a
// record, a stream, then /exit. Each snippet is compiled by javac inside the JVM.
int x = 6 * 7
String greeting = "hello " + x
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
fib(20)
record Point(int x, int y) { int dist() { return Math.abs(x) + Math.abs(y); } }
var points = java.util.stream.IntStream.range(0, 10).mapToObj(i -> new Point(i, -i)).toList()
points.stream().mapToInt(Point::dist).sum()
java.util.List.of("b", "a", "c").stream().sorted().collect(java.util.stream.Collectors.joining(","))
/exit
