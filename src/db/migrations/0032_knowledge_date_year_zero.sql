-- Date tag values of year 0 were accepted before tags were checked as PostgreSQL dates: PostgreSQL has no
-- year 0, so one such value made every date-filtered search of its base fail. They are dropped.
UPDATE knowledge_documents SET tag_slots = tag_slots - 'date1' WHERE tag_slots->>'date1' LIKE '0000-%';
UPDATE knowledge_documents SET tag_slots = tag_slots - 'date2' WHERE tag_slots->>'date2' LIKE '0000-%';
