-- The language of a brand's hosted checkout page when the payer's browser asks for neither of
-- the two it has (Accept-Language): Bahasa Indonesia unless the brand chooses English.
alter table brands add column checkout_language text not null default 'id'
  check (checkout_language in ('id', 'en'));
