package payload;

public interface Shape {
  double area();

  Kind kind();

  default String name() {
    return kind().name().toLowerCase();
  }
}
