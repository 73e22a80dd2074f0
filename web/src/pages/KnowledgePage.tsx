export default function KnowledgePage() { return <h1>Knowledge</h1>; }
