ALTER TABLE contacts ADD COLUMN email TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX contacts_email ON contacts (email) WHERE email <> '';
