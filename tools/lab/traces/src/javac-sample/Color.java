public enum Color {
  RED(0xff0000), GREEN(0x00ff00), BLUE(0x0000ff);

  private final int rgb;

  Color(int rgb) { this.rgb = rgb; }

  public String hex() { return String.format("#%06x", rgb); }
}
