"""Apply the SQL files in migrations/ (NNN_name.sql) that the database has not seen yet.

usage: DATABASE_PATH=/path/to/app.db python migrate.py
"""
import glob
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    path = os.environ.get("DATABASE_PATH")
    if not path:
        sys.exit("DATABASE_PATH is not set")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    done = {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}
    for file in sorted(glob.glob(os.path.join(HERE, "migrations", "*.sql"))):
        version = int(os.path.basename(file).split("_", 1)[0])
        if version in done:
            continue
        with open(file) as f:
            conn.executescript(f.read())
        conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
        conn.commit()
        print(f"applied {os.path.basename(file)}")
    conn.close()


if __name__ == "__main__":
    main()
