-- Bank and e-wallet master data: where disbursements may pay out to (spec 2.7, 4.7).
-- Short codes are the merchant-facing identifiers (bank_short_code, ewallet_provider), stored
-- uppercase. bi_code is the bank's 3-digit Bank Indonesia clearing code (sandi bank, as used
-- by SKN/RTGS/BI-FAST); it is not unique because a sharia business unit (UUS) clears through
-- its parent's code. Everything is seeded enabled; operators switch entries with the ops CLI.
--
-- API processes cache the enabled lists for an hour, so every write to these tables, whoever
-- makes it (the ops CLI, a later migration, an operator in psql), notifies channel
-- kasir_master_data from a statement trigger in the writing transaction; each API process
-- listens and drops its cache when the change commits.

create table banks (
  id uuid primary key default gen_random_uuid(),
  short_code text not null
    constraint banks_short_code_check check (short_code ~ '^[A-Z0-9_]{2,32}$'),
  name text not null
    constraint banks_name_check check (length(name) between 1 and 100),
  bi_code text not null
    constraint banks_bi_code_check check (bi_code ~ '^[0-9]{3}$'),
  is_enabled boolean not null default true,
  sort_order integer not null default 1000,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint banks_short_code_key unique (short_code)
);

create table ewallets (
  id uuid primary key default gen_random_uuid(),
  short_code text not null
    constraint ewallets_short_code_check check (short_code ~ '^[A-Z0-9_]{2,32}$'),
  name text not null
    constraint ewallets_name_check check (length(name) between 1 and 100),
  -- A path on Kasir's own public base URL ("/assets/..."), or an absolute http(s) URL.
  logo_url text not null
    constraint ewallets_logo_url_check check (logo_url ~ '^(/[^/]|https?://)'),
  is_enabled boolean not null default true,
  sort_order integer not null default 1000,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint ewallets_short_code_key unique (short_code)
);

-- The spec's ten common banks first, in its order; then national, digital, foreign and
-- regional development banks (BPD).
insert into banks (short_code, bi_code, name, sort_order) values
  ('BCA', '014', 'Bank Central Asia', 10),
  ('MANDIRI', '008', 'Bank Mandiri', 20),
  ('BNI', '009', 'Bank Negara Indonesia', 30),
  ('BRI', '002', 'Bank Rakyat Indonesia', 40),
  ('CIMB', '022', 'CIMB Niaga', 50),
  ('PERMATA', '013', 'Bank Permata', 60),
  ('BTN', '200', 'Bank Tabungan Negara', 70),
  ('DANAMON', '011', 'Bank Danamon', 80),
  ('PANIN', '019', 'Panin Bank', 90),
  ('MAYBANK', '016', 'Maybank Indonesia', 100),
  ('BSI', '451', 'Bank Syariah Indonesia', 110),
  ('OCBC', '028', 'Bank OCBC NISP', 120),
  ('MEGA', '426', 'Bank Mega', 130),
  ('BTPN', '213', 'Bank SMBC Indonesia (BTPN)', 140),
  ('BUKOPIN', '441', 'KB Bank (Bukopin)', 150),
  ('SINARMAS', '153', 'Bank Sinarmas', 160),
  ('UOB', '023', 'Bank UOB Indonesia', 170),
  ('MUAMALAT', '147', 'Bank Muamalat Indonesia', 180),
  ('BCA_SYARIAH', '536', 'BCA Syariah', 190),
  ('JAGO', '542', 'Bank Jago', 200),
  ('SEABANK', '535', 'SeaBank Indonesia', 210),
  ('BCA_DIGITAL', '501', 'BCA Digital (blu)', 220),
  ('BNC', '490', 'Bank Neo Commerce', 230),
  ('ALLO', '567', 'Allo Bank', 240),
  ('RAYA', '494', 'Bank Raya Indonesia', 250),
  ('SUPERBANK', '562', 'Super Bank Indonesia', 260),
  ('AMAR', '531', 'Bank Amar Indonesia', 270),
  ('KROM', '459', 'Krom Bank Indonesia', 280),
  ('OKE', '466', 'Bank Oke Indonesia', 290),
  ('NOBU', '503', 'Bank Nationalnobu', 300),
  ('HANA', '484', 'Bank KEB Hana Indonesia', 310),
  ('MNC', '485', 'Bank MNC Internasional', 320),
  ('MAYAPADA', '097', 'Bank Mayapada', 330),
  ('ARTHA_GRAHA', '037', 'Bank Artha Graha Internasional', 340),
  ('CAPITAL', '054', 'Bank Capital Indonesia', 350),
  ('BUMI_ARTA', '076', 'Bank Bumi Arta', 360),
  ('SAMPOERNA', '523', 'Bank Sahabat Sampoerna', 370),
  ('MANTAP', '564', 'Bank Mandiri Taspen', 380),
  ('VICTORIA', '566', 'Bank Victoria International', 390),
  ('MASPION', '157', 'Bank Maspion Indonesia', 400),
  ('MESTIKA', '151', 'Bank Mestika Dharma', 410),
  ('INA', '513', 'Bank Ina Perdana', 420),
  ('INDEX', '555', 'Bank Index Selindo', 430),
  ('JASA_JAKARTA', '472', 'Bank Jasa Jakarta', 440),
  ('MULTIARTA', '548', 'Bank Multiarta Sentosa', 450),
  ('MEGA_SYARIAH', '506', 'Bank Mega Syariah', 460),
  ('PANIN_SYARIAH', '517', 'Bank Panin Dubai Syariah', 470),
  ('VICTORIA_SYARIAH', '405', 'Bank Victoria Syariah', 480),
  ('BJB_SYARIAH', '425', 'Bank BJB Syariah', 490),
  ('ALADIN', '947', 'Bank Aladin Syariah', 500),
  ('WOORI', '212', 'Bank Woori Saudara', 510),
  ('SHINHAN', '152', 'Bank Shinhan Indonesia', 520),
  ('QNB', '167', 'Bank QNB Indonesia', 530),
  ('ICBC', '164', 'Bank ICBC Indonesia', 540),
  ('CCB', '036', 'Bank China Construction Bank Indonesia', 550),
  ('HSBC', '087', 'Bank HSBC Indonesia', 560),
  ('CITIBANK', '031', 'Citibank', 570),
  ('DBS', '046', 'Bank DBS Indonesia', 580),
  ('STANDARD_CHARTERED', '050', 'Standard Chartered Bank', 590),
  ('MUFG', '042', 'MUFG Bank', 600),
  ('MIZUHO', '048', 'Bank Mizuho Indonesia', 610),
  ('RESONA', '047', 'Bank Resona Perdania', 620),
  ('BOC', '069', 'Bank of China (Hong Kong)', 630),
  ('JPMORGAN', '032', 'JPMorgan Chase Bank', 640),
  ('BOFA', '033', 'Bank of America', 650),
  ('DEUTSCHE', '067', 'Deutsche Bank', 660),
  ('BNP_PARIBAS', '057', 'Bank BNP Paribas Indonesia', 670),
  ('BJB', '110', 'Bank BJB', 700),
  ('DKI', '111', 'Bank DKI', 710),
  ('BPD_DIY', '112', 'Bank BPD DIY', 720),
  ('JATENG', '113', 'Bank Jateng', 730),
  ('JATIM', '114', 'Bank Jatim', 740),
  ('JAMBI', '115', 'Bank Jambi', 750),
  ('ACEH', '116', 'Bank Aceh Syariah', 760),
  ('SUMUT', '117', 'Bank Sumut', 770),
  ('NAGARI', '118', 'Bank Nagari', 780),
  ('RIAU_KEPRI', '119', 'Bank Riau Kepri Syariah', 790),
  ('SUMSEL_BABEL', '120', 'Bank Sumsel Babel', 800),
  ('LAMPUNG', '121', 'Bank Lampung', 810),
  ('KALSEL', '122', 'Bank Kalsel', 820),
  ('KALBAR', '123', 'Bank Kalbar', 830),
  ('KALTIMTARA', '124', 'Bank Kaltimtara', 840),
  ('KALTENG', '125', 'Bank Kalteng', 850),
  ('SULSELBAR', '126', 'Bank Sulselbar', 860),
  ('SULUTGO', '127', 'Bank SulutGo', 870),
  ('NTB_SYARIAH', '128', 'Bank NTB Syariah', 880),
  ('BALI', '129', 'Bank BPD Bali', 890),
  ('NTT', '130', 'Bank NTT', 900),
  ('MALUKU_MALUT', '131', 'Bank Maluku Malut', 910),
  ('PAPUA', '132', 'Bank Papua', 920),
  ('BENGKULU', '133', 'Bank Bengkulu', 930),
  ('SULTENG', '134', 'Bank Sulteng', 940),
  ('SULTRA', '135', 'Bank Sultra', 950),
  ('BANTEN', '137', 'Bank Banten', 960);

-- The spec's seven e-wallets, in its order. Logos are served by Kasir itself
-- (GET /assets/ewallets/<code>.svg), so the list works without outside hosts.
insert into ewallets (short_code, name, logo_url, sort_order) values
  ('GOPAY', 'GoPay', '/assets/ewallets/gopay.svg', 10),
  ('GOPAYDRIVER', 'GoPay Driver', '/assets/ewallets/gopaydriver.svg', 20),
  ('OVO', 'OVO', '/assets/ewallets/ovo.svg', 30),
  ('SHOPEEPAY', 'ShopeePay', '/assets/ewallets/shopeepay.svg', 40),
  ('LINKAJA', 'LinkAja', '/assets/ewallets/linkaja.svg', 50),
  ('DANA', 'DANA', '/assets/ewallets/dana.svg', 60),
  ('KASPRO', 'KasPro', '/assets/ewallets/kaspro.svg', 70);

-- The payload names the table; listeners treat any notification as "drop what you cached".
create function kasir_master_data_changed() returns trigger
language plpgsql as $$
begin
  perform pg_notify('kasir_master_data', tg_table_name);
  return null;
end
$$;

create trigger banks_notify_change
  after insert or update or delete or truncate on banks
  for each statement execute function kasir_master_data_changed();

create trigger ewallets_notify_change
  after insert or update or delete or truncate on ewallets
  for each statement execute function kasir_master_data_changed();
