export default function TablesPage() { return <h1>Tables</h1>; }
