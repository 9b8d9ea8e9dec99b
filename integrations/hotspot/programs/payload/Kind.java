package payload;

public enum Kind { ROUND, ANGULAR }
