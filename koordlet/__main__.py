"""Entry point: `koordlet` and `python -m koordlet`."""


def main() -> int:
    raise SystemExit("koordlet: daemon not wired yet")


if __name__ == "__main__":
    main()
